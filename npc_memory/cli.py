"""The ``npc-memory`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

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
    export.add_argument("--db", required=True, metavar="PATH", help="store directory")
    export.set_defaults(run=_export)

    load = commands.add_parser("import", help="load an export into a store")
    load.add_argument("--db", required=True, metavar="PATH", help="store directory (created if missing)")
    load.add_argument("file", nargs="?", default="-", help="export file (default: standard input)")
    mode = load.add_mutually_exclusive_group()
    mode.add_argument("--merge", action="store_true", help="overwrite documents with the same keys")
    mode.add_argument("--replace", action="store_true", help="also delete documents not in the export")
    load.set_defaults(run=_import)

    repair = commands.add_parser(
        "repair", help="mend a damaged store: restore previous generations, mend values, fold the journal"
    )
    repair.add_argument("--db", required=True, metavar="PATH", help="store directory")
    repair.add_argument(
        "--quarantine", action="store_true",
        help="move documents that cannot be mended into PATH/quarantine so the rest of the world loads",
    )
    repair.set_defaults(run=_repair)

    stats = commands.add_parser("stats", help="counts and health of a store at rest")
    stats.add_argument("--db", required=True, metavar="PATH", help="store directory")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(run=_stats)

    inspect = commands.add_parser("inspect", help="summarise a store, or one NPC's memories")
    inspect.add_argument("--db", required=True, metavar="PATH", help="store directory")
    inspect.add_argument("--npc", metavar="KEY", help="show this NPC's relationships and memories")
    inspect.set_defaults(run=_inspect)

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


def _store_command(name: str, db: str, action: Callable[[], int]) -> int:
    """Run a store command: a store in use is refused (naming its owner's process id),
    and a store error is one line naming the store, not a traceback."""
    from npc_memory.store.tinydb_store import check_unlocked

    try:
        check_unlocked(db)
        return action()
    except StoreError as exc:
        print(f"npc-memory {name}: {exc}", file=sys.stderr)
        return 1


def _export(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import export_store

    def run() -> int:
        sys.stdout.buffer.write(export_store(args.db))
        return 0

    return _store_command("export", args.db, run)


def _import(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import ImportMode, import_store

    def run() -> int:
        if args.file == "-":
            data, source = sys.stdin.buffer.read(), "<stdin>"
        else:
            try:
                data, source = Path(args.file).read_bytes(), args.file
            except OSError as exc:
                raise StoreError(f"cannot read {args.file}: {exc}") from exc
        mode: ImportMode = "merge" if args.merge else "replace" if args.replace else "new"
        count = import_store(args.db, data, mode=mode, source=source)
        print(f"imported {count} documents into {args.db}")
        return 0

    return _store_command("import", args.db, run)


def _repair(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import repair_store

    def run() -> int:
        report = repair_store(args.db, quarantine=args.quarantine)
        for path in report.restored:
            print(f"restored {path} from its previous generation (the damaged file is kept as .broken)")
        for path, changes in report.mended:
            print(f"mended {path} (the damaged file is kept as .broken): " + "; ".join(changes))
        for path, problem in report.quarantined:
            print(f"quarantined {path}: {problem}")
        for path in report.removed:
            print(f"removed {path}: the previous generation of a forgotten document")
        for problem in report.journal:
            print(f"journal: {problem}")
        for path, problem in report.unrecoverable:
            print(f"cannot mend {path}: {problem}", file=sys.stderr)
        if report.unrecoverable:
            print(
                f"to load the rest of the world, move what cannot be mended aside: "
                f"npc-memory repair --db {args.db} --quarantine",
                file=sys.stderr,
            )
        print(
            f"{report.sound} files sound, {len(report.restored)} restored, {len(report.mended)} mended, "
            f"{len(report.quarantined)} quarantined, {len(report.unrecoverable)} unrecoverable"
        )
        return 1 if report.unrecoverable else 0

    return _store_command("repair", args.db, run)


def _inspect(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import inspect_store

    def run() -> int:
        sys.stdout.write(inspect_store(args.db, npc=args.npc))
        return 0

    return _store_command("inspect", args.db, run)


def _stats(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import store_stats

    def run() -> int:
        stats = store_stats(args.db)
        if args.json:
            sys.stdout.write(msgspec.json.format(msgspec.json.encode(stats), indent=2).decode() + "\n")
            return 0 if stats.health == "ok" else 1
        print(f"store {stats.path}: {stats.health}")
        for problem in stats.problems:
            print(f"  {problem}")
        print(
            f"world {stats.world!r}, game time {stats.clock:.0f} s, {stats.snapshots} snapshots; "
            f"{stats.npcs} NPCs, {stats.players} players, {stats.memories} memories, {stats.facts} facts, "
            f"{stats.relationships} relationships; {stats.pending_extractions} pending extractions"
        )
        print(
            f"{stats.bytes} bytes on disk ({stats.journal_bytes} in {stats.journal_segments} journal "
            f"segments), {stats.audit_entries} audit entries, {stats.quarantined} quarantined files"
        )
        return 0 if stats.health == "ok" else 1

    return _store_command("stats", args.db, run)


def _pack_validate(args: argparse.Namespace) -> int:
    status = 0
    for path in args.paths:
        try:
            pack = load_pack(path)
        except PackError as exc:
            count = len(exc.problems)
            print(f"{exc}\n{path}: {count} problem{'' if count == 1 else 's'}", file=sys.stderr)
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
