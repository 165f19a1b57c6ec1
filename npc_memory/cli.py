"""The ``npc-memory`` command line."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from npc_memory.content import bundled_packs, load_pack
from npc_memory.errors import InvalidArgumentError, NpcMemoryError, PackError, StoreError, UnknownContentError

if TYPE_CHECKING:
    from npc_memory.plugin import MemoryPlugin
    from npc_memory.store import Store

T = TypeVar("T")


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

    demo = commands.add_parser(
        "demo", help="simulate a village or a town offline and tell what happened",
        description="Simulate a world offline (no API key, no server) and tell its story: per game day "
        "the deeds, rumours, relationship changes, forgetting and habits, then a summary.",
    )
    demo.add_argument(
        "scenario", nargs="?", choices=("village", "town"), default="village",
        help="village: 8 NPCs, 3 players (default); town: --npcs NPCs in districts, --players players",
    )
    demo.add_argument(
        "--days", type=_positive_int, default=None, help="game days to simulate (default 7; town 30)"
    )
    demo.add_argument("--seed", type=int, default=7, help="random seed; same seed, same run (default 7)")
    demo.add_argument("--pack", default="village", help="content pack name or TOML path (default village)")
    demo.add_argument("--npcs", type=_positive_int, default=1000, help="town: NPCs (default 1000)")
    demo.add_argument("--players", type=_positive_int, default=50, help="town: players (default 50)")
    demo.add_argument(
        "--db", default=None, metavar="PATH",
        help="TinyDB store directory the world is saved to (village default npc-memory-demo.db; "
        "the town is kept in memory unless given)",
    )
    demo.add_argument("--memory", action="store_true", help="keep the world in memory only (no store)")
    demo.add_argument("--resume", action="store_true", help="continue the world saved in --db")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")
    demo.add_argument("--json", action="store_true", help="print the story as JSON instead of text")
    demo.add_argument(
        "--report", default=None, metavar="DIR",
        help="write PNG plots and an HTML page there (town default npc-memory-town-report)",
    )
    demo.add_argument("--no-report", action="store_true", help="write no report (town)")
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
    load.add_argument("--actor", default=_default_actor(), help="who asks, for the audit log")
    load.set_defaults(run=_import)

    repair = commands.add_parser(
        "repair", help="mend a damaged store: restore previous generations, mend values, fold the journal"
    )
    repair.add_argument("--db", required=True, metavar="PATH", help="store directory")
    repair.add_argument("--actor", default=_default_actor(), help="who asks, for the audit log")
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

    _privacy_commands(commands)

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


def _privacy_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def store_command(
        name: str, help_text: str, run: Callable[[argparse.Namespace], int]
    ) -> argparse.ArgumentParser:
        command = commands.add_parser(name, help=help_text)
        command.add_argument(
            "--db", required=True, metavar="PATH_OR_URL", help="store directory or postgresql:// URL"
        )
        command.add_argument(
            "--world", metavar="NAME", help="the world in a PostgreSQL store (default: 'default')"
        )
        command.add_argument("--json", action="store_true", help="print the result as JSON")
        command.set_defaults(run=run)
        return command

    def changing(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--actor",
            default=_default_actor(),
            help="who asks, for the audit log (default cli:<user>)",
        )
        command.add_argument(
            "--pack", default=None, help="content pack (default: the store's pack if bundled, else village)"
        )

    forget = store_command("forget", "forget a player everywhere, in every generation stored", _forget)
    who = forget.add_mutually_exclusive_group(required=True)
    who.add_argument("--player", metavar="KEY", help="the player's key")
    who.add_argument("--resume", action="store_true", help="only finish forgetting a crash interrupted")
    changing(forget)
    end_game = store_command(
        "end-game", "purge (or compact) the session and anon memories of a game", _end_game
    )
    end_game.add_argument("--game", metavar="ID", help="game id (default: the store's current game)")
    changing(end_game)
    consent = store_command("consent", "record whether a player consents to be remembered", _consent)
    consent.add_argument("--player", required=True, metavar="KEY", help="the player's key")
    choice = consent.add_mutually_exclusive_group(required=True)
    choice.add_argument("--give", action="store_true", help="the player consents")
    choice.add_argument("--withdraw", action="store_true", help="the player withdraws consent")
    changing(consent)
    clone = store_command("clone", "copy an NPC's general memories to another NPC", _clone)
    clone.add_argument("--from", dest="source", required=True, metavar="NPC", help="source NPC key")
    clone.add_argument("--to", dest="target", required=True, metavar="NPC", help="target NPC key")
    clone.add_argument(
        "--categories", default="profile,social,knowledge", help="comma-separated (default: all three)"
    )
    clone.add_argument("--dry-run", action="store_true", help="only list what would be copied")
    changing(clone)
    store_command("audit", "list the store's audit log", _audit)


def _default_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name for this uid (containers)
        return "cli"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _demo(args: argparse.Namespace) -> int:
    from npc_memory.demo import run_town, run_village
    from npc_memory.demo.progress import progress_bar
    from npc_memory.demo.report import ReportError

    town = args.scenario == "town"
    days = args.days or (30 if town else 7)
    db = args.db if args.db is not None or town else "npc-memory-demo.db"
    report_dir = None if args.no_report else args.report or ("npc-memory-town-report" if town else None)
    try:
        store = None if args.memory else db
        if args.resume and store is None:
            raise StoreError("--resume continues a saved world: give --db PATH (and not --memory)")
        if report_dir is not None:
            from npc_memory.demo.report import check_plotting

            check_plotting()
        bar = None if args.json or args.quiet else progress_bar(args.scenario)
        if town:
            result = run_town(
                days=days, seed=args.seed, npcs=args.npcs, players=args.players, pack=args.pack,
                store=store, resume=args.resume, progress=bar,
            )
        else:
            result = run_village(
                days=days, seed=args.seed, pack=args.pack, store=store, resume=args.resume, progress=bar
            )
    except (PackError, UnknownContentError, StoreError, InvalidArgumentError, ReportError) as exc:
        print(f"npc-memory demo: {exc}", file=sys.stderr)
        return 1
    assert result.story is not None
    if args.json:
        json.dump(result.story.to_json(), sys.stdout)
        sys.stdout.write("\n")
    elif args.quiet:
        sys.stdout.write(result.story.text(quiet=True) + result.saved)
    else:
        sys.stdout.write(result.report)
    if report_dir is not None:
        from npc_memory.demo.report import write_report

        page = write_report(result.story, report_dir)
        print(f"Report: {page} (open it in a browser)", file=sys.stderr if args.json else sys.stdout)
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
        sys.stdout.buffer.write(export_store(args.db, world=args.world))
        return 0

    return _store_command("export", args.db, run)


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
        count = import_store(args.db, data, mode=mode, source=source, world=args.world, actor=args.actor)
        print(f"imported {count} documents into {describe(args.db)}")
        return 0

    return _store_command("import", args.db, run)


def _repair(args: argparse.Namespace) -> int:
    from npc_memory.store.tools import repair_store

    def run() -> int:
        report = repair_store(args.db, quarantine=args.quarantine, actor=args.actor)
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
        if stats.memories_by_source:
            by_source = sorted(stats.memories_by_source.items())
            sources = ", ".join(f"{count} {source}" for source, count in by_source)
            print(f"memories about players by source: {sources}")
        if stats.grounding:
            print("grounding of LLM memories:")
            for reason, count in stats.grounding.items():
                print(f"  {count:6d}  {reason}")
        print(
            f"{stats.bytes} bytes on disk ({stats.journal_bytes} in {stats.journal_segments} journal "
            f"segments), {stats.audit_entries} audit entries, {stats.quarantined} quarantined files"
        )
        return 0 if stats.health == "ok" else 1

    return _store_command("stats", args.db, run)


def _with_plugin(
    args: argparse.Namespace,
    name: str,
    action: Callable[[MemoryPlugin], msgspec.Struct],
    *,
    writes: bool = True,
) -> int:
    """Open the store at ``args.db`` (a directory is refused while a game runs on it;
    a PostgreSQL world whose documents game servers own is refused, except to forget a
    player, end a game or withdraw consent: the running servers then do their part) in
    an esper world of the name the store holds (so its metadata keeps it), run
    ``action`` on its plugin, save unless it ``writes`` nothing (a dry run), and print
    the result."""
    import esper

    import npc_memory
    from npc_memory.store.migrations import MigrationContext
    from npc_memory.store.transfer import is_url, open_store

    def run() -> int:
        meta = _read_store(args, lambda store: store.read_meta())
        pack = args.pack or (meta.pack if meta is not None and meta.pack in bundled_packs() else "village")
        world = meta.world if meta is not None and meta.world else f"npc-memory-{name}-{os.getpid()}"
        store: Store | Path = Path(args.db)
        if is_url(args.db):
            migration = MigrationContext(thresholds=load_pack(pack).relationships.thresholds)
            store = open_store(args.db, world=_world(args), migration=migration)
            if name not in ("forget", "end-game") and not (name == "consent" and not args.give):
                _check_unowned(store)
        plugin = npc_memory.install(world=world, pack=pack, store=store)
        try:
            result = action(plugin)
        finally:
            npc_memory.uninstall(world, save=writes)
            if world != esper.current_world:
                esper.delete_world(world)
        if args.json:
            sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n")
        else:
            sys.stdout.write(_describe(name, result))
        return 0

    try:
        return _store_command(name, args.db, run)
    except NpcMemoryError as exc:
        print(f"npc-memory {name}: {exc}", file=sys.stderr)
        return 1


def _describe(name: str, result: msgspec.Struct) -> str:
    """A line or a few about a privacy operation's result."""
    data = msgspec.to_builtins(result)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(data.get("counts", {}).items()) if v) or "nothing"
    if name == "forget" and isinstance(data.get("resumed"), list):  # (--resume: the reports it finished)
        finished = [
            f"{'did this part of' if r['waiting'] else 'finished'} {_resumed(r)}\n" for r in data["resumed"]
        ]
        return "".join(finished) or "nothing to finish\n"
    if name == "forget":
        return f"forgot player {data['player']}: {counts}{_waiting(data['waiting'], 'forget them')}\n"
    if name == "end-game":
        return f"ended game {data['game']}: {counts}{_waiting(data['waiting'], 'end it')}\n"
    if name == "consent":
        given = "given" if data["consent"] else "withdrawn"
        left = _waiting(data["waiting"], "rewrite their items")
        return f"player {data['player']} consent {given}: {counts}{left}\n"
    lines = [f"clone {data['source']} -> {data['target']}{' (dry run)' if data['dry_run'] else ''}:"]
    for category, items in data["items"].items():
        lines += [f"  {category}: {item['id']} {item['content']}" for item in items]
    lines += [f"  skipped {s['category']} {s['id']}: {s['reason']}" for s in data["skipped"]]
    return "\n".join(lines) + "\n"


def _resumed(report: dict[str, Any]) -> str:
    """What a privacy operation ``install`` resumed was, and what it left to the game
    servers running (``report``: its report as built-in types)."""
    if "game" in report:
        return f"ending game {report['game']}{_waiting(report['waiting'], 'end it')}"
    if "consent" in report:
        left = _waiting(report["waiting"], "rewrite their items")
        return f"withdrawing the consent of player {report['player']}{left}"
    return f"forgetting player {report['player']}{_waiting(report['waiting'], 'forget them')}"


def _waiting(sessions: list[int], what: str) -> str:
    """What a privacy operation left to the game servers running on a shared world
    (``what`` they do in their NPCs)."""
    if not sessions:
        return ""
    return (
        f"; the running game servers (sessions {', '.join(map(str, sessions))}) {what} in their "
        "NPCs at their next snapshot, and the last of them finishes it"
    )


class _Resumed(msgspec.Struct):
    """What ``forget --resume`` finished: one report per interrupted forgetting."""

    resumed: list[msgspec.Struct]


def _forget(args: argparse.Namespace) -> int:
    if args.resume:
        return _with_plugin(args, "forget", lambda p: _Resumed(list(p.privacy.resumed)))
    return _with_plugin(args, "forget", lambda p: p.privacy.forget_player(args.player, actor=args.actor))


def _end_game(args: argparse.Namespace) -> int:
    return _with_plugin(args, "end-game", lambda p: p.privacy.end_game(args.game, actor=args.actor))


def _consent(args: argparse.Namespace) -> int:
    return _with_plugin(
        args, "consent", lambda p: p.privacy.set_consent(args.player, bool(args.give), actor=args.actor)
    )


def _clone(args: argparse.Namespace) -> int:
    categories = [c.strip() for c in args.categories.split(",") if c.strip()]
    source, target, dry_run, actor = args.source, args.target, args.dry_run, args.actor
    return _with_plugin(
        args,
        "clone",
        lambda p: p.privacy.clone(source, target, categories, dry_run=dry_run, actor=actor),
        writes=not dry_run,
    )


def _check_unowned(store: Store) -> None:
    """Refuse (closing ``store``) a PostgreSQL world whose documents game servers own:
    a change to them would be refused half-way through."""
    from npc_memory.store.postgres import PostgresStore

    owners = store.other_owners() if isinstance(store, PostgresStore) else []
    if owners:
        store.close()
        raise StoreError(
            f"{store!r} is in use: game servers (sessions {', '.join(map(str, owners))}) own documents "
            "of the world; call the plugin's method on the game server, or run this when they have stopped"
        )


def _world(args: argparse.Namespace) -> str:
    """The world ``--world`` names in a PostgreSQL store."""
    from npc_memory.store.transfer import DEFAULT_WORLD

    return str(args.world or DEFAULT_WORLD)


def _read_store(args: argparse.Namespace, read: Callable[[Store], T]) -> T:
    """What ``read`` reads from the store ``args.db`` names, only read: a store
    directory, or a world (``--world``) of a PostgreSQL database that holds it."""
    from npc_memory.store.tinydb_store import is_store
    from npc_memory.store.transfer import describe, is_url, open_store

    url = is_url(args.db)
    if not url and not (Path(args.db).is_dir() and is_store(Path(args.db))):
        raise StoreError(f"no store at {args.db}")
    store = open_store(args.db, world=_world(args), create=False)  # (a directory: read-only)
    try:
        if url and store.read_meta() is None and not store.load().documents:
            raise StoreError(f"{describe(args.db)} holds no world {_world(args)!r}")
        return read(store)
    finally:
        store.close()


def _audit(args: argparse.Namespace) -> int:
    from npc_memory.store import TinyDBStore
    from npc_memory.store.audit import AuditReadout

    def read(store: Store) -> AuditReadout:
        return store.read_audit() if isinstance(store, TinyDBStore) else AuditReadout(entries=store.audit())

    def run() -> int:
        readout = _read_store(args, read)
        if args.json:
            sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(readout), indent=2) + b"\n")
        else:
            for e in readout.entries:
                counts = " ".join(f"{k}={v}" for k, v in sorted(e.counts.items()) if v)
                when = f"{e.wall_time or '-':25} {e.game_time:>10.0f}"
                print(f"{when} {e.actor or '-':16} {e.action:14} {e.target} {counts}")
        for problem in readout.problems:
            print(
                f"npc-memory audit: {problem.file}:{problem.line}: {problem.problem} (skipped; "
                "'npc-memory repair' mends the file)",
                file=sys.stderr,
            )
        return 1 if readout.problems else 0

    return _store_command("audit", args.db, run)


def _migrate(args: argparse.Namespace) -> int:
    from npc_memory.store.tinydb_store import check_unlocked
    from npc_memory.store.transfer import describe, migrate_store

    def run() -> int:
        check_unlocked(args.target)  # the source is checked as the command's store
        report = migrate_store(args.source, args.target, world=args.world)
        print(
            f"migrated world {report.world!r}: {report.documents} documents and {report.audit_entries} "
            f"audit entries from {describe(args.source)} to {describe(args.target)}"
        )
        return 0

    return _store_command("migrate", args.source, run)


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
