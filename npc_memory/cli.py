"""The ``npc-memory`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from npc_memory.content import bundled_packs, load_pack
from npc_memory.errors import PackError, StoreError, UnknownContentError


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
    demo.add_argument(
        "--db", default="npc-memory-demo.db", metavar="PATH",
        help="TinyDB store directory the village is saved to (default npc-memory-demo.db)",
    )
    demo.add_argument("--memory", action="store_true", help="keep the village in memory only (no store)")
    demo.add_argument("--resume", action="store_true", help="continue the village saved in --db")
    demo.set_defaults(run=_demo)

    export = commands.add_parser("export", help="write a store as stable JSON to standard output")
    export.add_argument(
        "--db", required=True, metavar="PATH_OR_URL", help="store directory or postgresql:// URL"
    )
    export.add_argument("--world", metavar="NAME", help="the world to export from a PostgreSQL store")
    export.set_defaults(run=_export)

    load = commands.add_parser("import", help="load an export into a store")
    load.add_argument(
        "--db", required=True, metavar="PATH_OR_URL",
        help="store directory (created if missing) or postgresql:// URL",
    )
    load.add_argument("--world", metavar="NAME", help="the world to import into a PostgreSQL store")
    load.add_argument("file", nargs="?", default="-", help="export file (default: standard input)")
    mode = load.add_mutually_exclusive_group()
    mode.add_argument("--merge", action="store_true", help="overwrite documents with the same keys")
    mode.add_argument("--replace", action="store_true", help="also delete documents not in the export")
    load.set_defaults(run=_import)

    repair = commands.add_parser("repair", help="restore damaged store files from their previous generation")
    repair.add_argument("--db", required=True, metavar="PATH", help="store directory")
    repair.set_defaults(run=_repair)

    inspect = commands.add_parser("inspect", help="summarise a store, or one NPC's memories")
    inspect.add_argument("--db", required=True, metavar="PATH", help="store directory")
    inspect.add_argument("--npc", metavar="KEY", help="show this NPC's relationships and memories")
    inspect.set_defaults(run=_inspect)

    migrate = commands.add_parser(
        "migrate", help="copy a world from one store to another (TinyDB or PostgreSQL)"
    )
    migrate.add_argument("--from", dest="source", required=True, metavar="PATH_OR_URL", help="store to copy")
    migrate.add_argument(
        "--to", dest="target", required=True, metavar="PATH_OR_URL",
        help="empty store to copy into: a directory (created if missing) or a postgresql:// URL",
    )
    migrate.add_argument(
        "--world", metavar="NAME",
        help="the world's name in a PostgreSQL store (default: the name the source's metadata gives)",
    )
    migrate.set_defaults(run=_migrate)

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
        store = None if args.memory else args.db
        result = run_village(days=args.days, seed=args.seed, pack=args.pack, store=store, resume=args.resume)
    except (PackError, UnknownContentError, StoreError) as exc:
        print(f"npc-memory demo: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(result.report)
    return 0


def _store_command(name: str, action: Callable[[], int]) -> int:
    try:
        return action()
    except StoreError as exc:
        print(f"npc-memory {name}: {exc}", file=sys.stderr)
        return 1


def _export(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import export_store

    def run() -> int:
        sys.stdout.buffer.write(export_store(args.db, world=args.world))
        return 0

    return _store_command("export", run)


def _import(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import ImportMode, import_store
    from npc_memory.store.transfer import describe

    def run() -> int:
        if args.file == "-":
            data, source = sys.stdin.buffer.read(), "<stdin>"
        else:
            try:
                data, source = Path(args.file).read_bytes(), args.file
            except OSError as exc:
                raise StoreError(f"cannot read {args.file}: {exc}") from exc
        mode: ImportMode = "merge" if args.merge else "replace" if args.replace else "new"
        count = import_store(args.db, data, mode=mode, source=source, world=args.world)
        print(f"imported {count} documents into {describe(args.db)}")
        return 0

    return _store_command("import", run)


def _repair(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import repair_store

    def run() -> int:
        report = repair_store(args.db)
        for path in report.restored:
            print(f"restored {path} from its previous generation (the damaged file is kept as .broken)")
        for path, problem in report.unrecoverable:
            print(f"cannot repair {path}: {problem}; no good previous generation", file=sys.stderr)
        print(
            f"{report.sound} files sound, {len(report.restored)} restored, "
            f"{len(report.unrecoverable)} unrecoverable"
        )
        return 1 if report.unrecoverable else 0

    return _store_command("repair", run)


def _inspect(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import inspect_store

    def run() -> int:
        sys.stdout.write(inspect_store(args.db, npc=args.npc))
        return 0

    return _store_command("inspect", run)


def _migrate(args: argparse.Namespace) -> int:
    from npc_memory.store.transfer import describe, migrate_store

    def run() -> int:
        report = migrate_store(args.source, args.target, world=args.world)
        print(
            f"migrated world {report.world!r}: {report.documents} documents and {report.audit_entries} "
            f"audit entries from {describe(args.source)} to {describe(args.target)}"
        )
        return 0

    return _store_command("migrate", run)


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
