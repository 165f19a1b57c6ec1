"""A small village in which one player leaves traces everywhere, for the privacy tests
and the kill -9 child: memories, relationships, facts and their gossip copies, open
conversations and summaries, queued extraction jobs, a consolidated habit, world
memories that name the player, and older generations of the store's files; and the
two backends the privacy tests run on (:class:`Backend`)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import npc_memory
from npc_memory.store import AuditEntry, TinyDBStore
from npc_memory.store.tools import export_store

from .conftest import tick

KEY = "zqxalice"
NAME = "Zorvanna"
OTHER = "bobkey"


def build(plugin: npc_memory.MemoryPlugin, npcs: int = 6, *, key: str = KEY, name: str = NAME) -> None:
    """Populate ``plugin``'s world; every NPC ends up holding something about ``key``."""
    plugin.add_player(key=key, name=name, faction="adventurers", room="square", consent=True)
    plugin.add_player(key=OTHER, name="Bob", faction="villagers", room="square", consent=True)
    for i in range(npcs):
        npc = plugin.add_npc(key=f"npc{i}", name=f"Npc {i}", archetype="bard", room="square")
        plugin.remember(npc, key, f"{name} helped me carry wood", tags=["helpful"], importance=0.8)
        plugin.remember(npc, key, f"{name} sold me a sword", tags=["trade"], importance=0.6, kind="semantic")
        plugin.remember(npc, None, f"The market is busy; {name} was there", importance=0.4)
        plugin.remember(npc, OTHER, f"Bob said {name} is brave", tags=["heroic"])
        plugin.remember(npc, OTHER, "Bob likes apples", tags=["gift"])
        plugin.adjust_relationship(npc, key, trust=0.3)
        plugin.say(npc, key, name, "Bandits are attacking! Help me fight!")
        plugin.say(npc, key, f"Npc {i}", "I'll get my hammer.")
        if i % 2 == 0:
            plugin.end_conversation(npc, key)  # a queued job, a summary
            plugin.say(npc, key, name, "Thanks for the help, friend.")  # and an open one
        plugin.say(npc, OTHER, "Bob", f"Have you seen {name} today?")
    plugin.observe(room="square", subject=key, content=f"{name} stole a loaf of bread", tags=["theft"], importance=0.9)
    plugin.learn_fact("npc0", f"{name} is a famous duellist", subject=key, tags=["combat"], importance=0.9)
    plugin.learn_fact("npc1", "The well is dry", tags=["village"], importance=0.9)


def built(path: Path, url: str | None, npcs: int) -> Backend:
    """A new world (a store directory at ``path``, or a world on the PostgreSQL server
    at ``url``) holding :func:`build`'s village of ``npcs`` NPCs, saved."""
    backend = Backend(path, url)
    setup = npc_memory.install(world="setup", store=backend.store(), seed=2)
    build(setup, npcs=npcs)
    npc_memory.uninstall("setup")
    return backend


def mentions(plugin: npc_memory.MemoryPlugin, npc: str) -> list[str]:
    """What ``npc`` (live in ``plugin``) remembers or knows that names the player."""
    held = [m.content for m in plugin.memories(npc)] + [f.content for f in plugin.facts(npc)]
    return [text for text in held if KEY in text or NAME in text]


def fold(plugin: npc_memory.MemoryPlugin) -> None:
    """Fold the store's journal into its files now, on the store's writer thread (the
    thread that owns the store): the files get a new generation, the old one a .prev."""
    plugin._persistence.run_on_store(lambda store: store.checkpoint() if isinstance(store, TinyDBStore) else None)


def run(world: str, ticks: int, dt: float = 60.0) -> None:
    """``ticks`` ticks of ``dt`` real seconds (a game minute each by default) in ``world``."""
    tick(world, ticks, dt)


def store_bytes(db: Path) -> dict[str, bytes]:
    """Every file of a store directory (lock files aside), by relative path."""
    return {
        str(p.relative_to(db)): p.read_bytes()
        for p in sorted(db.rglob("*"))
        if p.is_file() and p.name not in ("LOCK", "LOCK.owner")
    }


def traces(db: Path, *needles: str) -> list[str]:
    """Files of the store at ``db`` containing any of ``needles`` (case-insensitive)."""
    lowered = [n.lower().encode() for n in needles]
    return [path for path, data in store_bytes(db).items() if any(n in data.lower() for n in lowered)]


_COPY_WORLD = [
    "INSERT INTO npc_memory_documents (world, kind, key, version, data) "
    "SELECT %(new)s, kind, key, version, data FROM npc_memory_documents WHERE world = %(old)s AND data IS NOT NULL",
    "INSERT INTO npc_memory_meta (world, server, data) SELECT %(new)s, server, data FROM npc_memory_meta "
    "WHERE world = %(old)s",
    "INSERT INTO npc_memory_audit (world, token, data) SELECT %(new)s, gen_random_uuid(), data "
    "FROM npc_memory_audit WHERE world = %(old)s ORDER BY id",
    "INSERT INTO npc_memory_privacy (world, salt, pending) SELECT %(new)s, salt, pending "
    "FROM npc_memory_privacy WHERE world = %(old)s",
]


class Backend:
    """Where a privacy test keeps its world: a TinyDB store directory (``path``) or a
    world of its own on the test PostgreSQL server (``url``)."""

    def __init__(self, path: Path, url: str | None = None) -> None:
        self.path = path
        self.url = url
        self.world = f"privacy-{uuid.uuid4().hex[:12]}"
        self.postgres = url is not None

    def __repr__(self) -> str:
        return "postgres" if self.postgres else "tinydb"

    def store(self, **options: Any) -> Any:
        """What ``install(store=...)`` takes to open the world (a new store each call)."""
        if self.url is None:
            return self.path
        from npc_memory.store.postgres import PostgresStore

        return PostgresStore(self.url, world=self.world, **options)

    def target(self) -> list[str]:
        """The store as a child process takes it: ``PATH``, or ``URL WORLD``."""
        return [str(self.path)] if self.url is None else [self.url, self.world]

    def copy(self, path: Path) -> Backend:
        """A copy of the store as it is now: the directory copied to ``path``, or the
        world's rows copied to a new world."""
        twin = Backend(path, self.url)
        if self.url is None:
            shutil.copytree(self.path, path)
            return twin
        import psycopg

        with psycopg.connect(self.url) as conn:
            for statement in _COPY_WORLD:
                conn.execute(statement, {"old": self.world, "new": twin.world})
        return twin

    def cli(self) -> list[str]:
        """The command line's arguments naming the store."""
        return ["--db", str(self.path)] if self.url is None else ["--db", self.url, "--world", self.world]

    def export(self) -> bytes:
        return export_store(self.path) if self.url is None else export_store(self.url, world=self.world)

    def audit(self) -> list[AuditEntry]:
        store = TinyDBStore(self.path) if self.url is None else self.store()
        try:
            entries: list[AuditEntry] = store.audit()
            return entries
        finally:
            store.close()

    def traces(self, *needles: str) -> list[str]:
        """Files of the store directory, or rows of the world (``table/row``), that hold
        any of ``needles`` (case-insensitive)."""
        if self.url is None:
            return traces(self.path, *needles)
        import psycopg

        found = []
        with psycopg.connect(self.url) as conn:
            for table, label, text in (
                ("npc_memory_documents", "key", "key || ' ' || coalesce(data::text, '')"),
                ("npc_memory_meta", "server", "data::text"),
                ("npc_memory_audit", "id::text", "data::text"),
                ("npc_memory_privacy", "world", "pending::text"),
            ):
                rows = conn.execute(f"SELECT {label}, {text} FROM {table} WHERE world = %s", (self.world,))
                lowered = [n.lower() for n in needles]
                found += [f"{table}/{name}" for name, data in rows if any(n in data.lower() for n in lowered)]
        return found


def about_player(backend: Backend) -> dict[str, Any]:
    """What the world's rows hold that a withdrawal of consent or the end of a game
    rewrites: under ``"npcs"``, per NPC, its memories and facts as (kind, scope, game,
    content, about whom) with ids left out; under ``"players"``, each player's consent."""
    from npc_memory.components import kind_of
    from npc_memory.rules.privacy import fact_scope
    from npc_memory.store import NpcDocument, PlayerDocument

    store = backend.store()
    try:
        documents = store.load().documents
    finally:
        store.close()
    npcs: dict[str, Any] = {}
    players: dict[str, bool] = {}
    for name, document in sorted(documents.items()):
        if isinstance(document, PlayerDocument):
            players[name] = document.profile.consent
        if isinstance(document, NpcDocument):
            held = [(player, m) for player, pair in document.bank.players.items() for m in pair.all()]
            npcs[name] = sorted(
                [(kind_of(m), m.scope, m.game, m.content, player) for player, m in held]
                + [(kind_of(m), m.scope, m.game, m.content, None) for m in document.bank.world.all()]
                + [("fact", fact_scope(f), f.game, f.content, f.subject) for f in document.knowledge.facts],
                key=repr,
            )
    return {"npcs": npcs, "players": players}


def unconsented(view: dict[str, Any], key: str = KEY) -> list[str]:
    """The NPCs of ``view`` (:func:`about_player`) still holding a ``player`` or ``social``
    item about ``key`` (what a withdrawal rewrites)."""
    return [
        name
        for name, items in view["npcs"].items()
        if any(subject == key and scope in ("player", "social") for _, scope, _, _, subject in items)
    ]


def withdrawn(view: dict[str, Any], key: str = KEY) -> dict[str, Any]:
    """What a withdrawal of ``key``'s consent left in ``view`` (:func:`about_player`):
    per NPC, the ``anon`` fragments and the ``player`` and ``social`` items about them."""
    return {
        name: [i for i in items if i[1] == "anon" or (i[4] == key and i[1] in ("player", "social"))]
        for name, items in view["npcs"].items()
    }


def build_game(plugin: npc_memory.MemoryPlugin, npcs: int = 3) -> None:
    """A game for ending: every NPC holds ``session`` memories and facts about a player
    who has not consented (``tom``), ``anon`` ones about an anonymous participant
    (``anon-1``, whom they also regard), ``session`` world memories, and ``player``
    memories about a consenting player (``alice``), tagged to be compacted by kind."""
    plugin.add_player(key="alice", name="Alice", room="square", consent=True)
    plugin.add_player(key="tom", name="Tom", room="square")
    plugin.add_player(key="anon-1", name="Stranger", room="square", anonymous=True)
    for i in range(npcs):
        npc = plugin.add_npc(key=f"npc{i}", name=f"Npc {i}", archetype="bard", room="square")
        plugin.remember(npc, "tom", "Tom traded fish for bread", tags=["trade"])
        plugin.remember(npc, "tom", f"Tom told joke {i}", tags=["humour"])
        plugin.remember(npc, "anon-1", "A stranger hummed a tune", tags=["music"])
        plugin.remember(npc, None, "A storm passed over the square", tags=["weather"])
        plugin.remember(npc, "alice", "Alice helped me carry wood", tags=["helpful"])
        plugin.adjust_relationship(npc, "anon-1", trust=0.2)
        plugin.learn_fact(npc, "Tom sells fish on market days", subject="tom", tags=["trade"])


def pending(backend: Backend) -> list[tuple[str, str]]:
    """The privacy operations (op, key) the world's store records as under way."""
    store = backend.store()
    try:
        return [(p.op, p.key) for p in store.pending_forgets()]
    finally:
        store.close()
