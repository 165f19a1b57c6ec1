"""The ``npc-memory`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from npc_memory.content import bundled_packs, load_pack
from npc_memory.errors import PackError, UnknownContentError


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 failure, 2 usage)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    status: int = args.run(args)
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npc-memory", description="Persistent NPC memory for esper: demo and tools."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser("demo", help="simulate a village offline and report what NPCs think")
    demo.add_argument("--days", type=_positive_int, default=7, help="game days to simulate (default 7)")
    demo.add_argument("--seed", type=int, default=7, help="random seed; same seed, same run (default 7)")
    demo.add_argument("--pack", default="village", help="content pack name or TOML path (default village)")
    demo.set_defaults(run=_demo)

    pack = commands.add_parser("pack", help="content pack tools")
    pack_commands = pack.add_subparsers(dest="pack_command", metavar="ACTION", required=True)
    validate = pack_commands.add_parser("validate", help="check content packs and name every mistake")
    validate.add_argument("paths", nargs="+", metavar="PATH", help="TOML pack file or bundled pack name")
    validate.set_defaults(run=_pack_validate)
    listing = pack_commands.add_parser("list", help="list the bundled packs")
    listing.set_defaults(run=_pack_list)
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _demo(args: argparse.Namespace) -> int:
    from npc_memory.demo import run_village

    try:
        result = run_village(days=args.days, seed=args.seed, pack=args.pack)
    except (PackError, UnknownContentError) as exc:
        print(f"npc-memory demo: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(result.report)
    return 0


def _pack_validate(args: argparse.Namespace) -> int:
    status = 0
    for path in args.paths:
        try:
            pack = load_pack(path)
        except PackError as exc:
            print(exc, file=sys.stderr)
            status = 1
            continue
        print(
            f"{path}: ok — pack '{pack.pack.name}' v{pack.pack.version}: "
            f"{len(pack.factions)} factions, {len(pack.archetypes)} archetypes, "
            f"{len(pack.relationships.tag_rules)} tag rules, "
            f"{len(pack.relationships.thresholds)} thresholds"
        )
    return status


def _pack_list(args: argparse.Namespace) -> int:
    for name in bundled_packs():
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
