"""kill -9 at random moments during ``forget_player``, on a TinyDB store and on the test
PostgreSQL server: after the restart the player is fully forgotten — no store file, row
or audit entry holds their key or name — and nothing else is lost, whether the kill
landed before the forgetting began (the player is intact, and forgetting again works),
in the middle (the restart finishes it, and the audit log says it was resumed), or after."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import npc_memory
from npc_memory.store import AuditEntry, TinyDBStore

from .kill import run_and_kill
from .privacy_world import KEY, NAME, OTHER, Backend, build, fold, run

CHILD = Path(__file__).with_name("forget_child.py")
KILLS = 24
NPCS = 30


def template(backend: Backend) -> None:
    """A store holding the player in documents, the journal, older generations, a
    damaged copy and a leftover temporary file (TinyDB), or in rows and an audit
    entry naming them (PostgreSQL)."""
    plugin = npc_memory.install(world="template", pack="village", store=backend.store(), seed=1)
    build(plugin, npcs=NPCS)
    run("template", 20)
    plugin.save()
    fold(plugin)
    for i in range(NPCS):  # a second generation of every NPC file: .prev files hold the player
        plugin.remember(f"npc{i}", None, f"A quiet day {i}")
    plugin.save()
    fold(plugin)
    plugin.remember("npc3", "zqxalice", f"{NAME} came back", tags=["helpful"])  # left in the journal
    plugin.save()
    npc_memory.uninstall("template")
    if backend.postgres:
        store = backend.store()
        store.append_audit(AuditEntry(action="note", target=KEY, details={"by": f"{NAME}'s friend"}))
        store.close()
        return
    db = backend.path
    doc = next((db / "docs").glob("npc5-*.json"))
    (doc.parent / (doc.name + ".broken")).write_bytes(doc.read_bytes()[:200])
    (doc.parent / (doc.name + ".tmp")).write_bytes(doc.read_bytes())
    # the template's own journal is folded at close: give the journal something to hold
    store = TinyDBStore(db, checkpoint_on_close=False)
    store.load()
    store.append([])
    store.close()


def wait_for_the_child_to_be_gone(backend: Backend) -> None:
    """A killed game server's PostgreSQL session ends a moment after the process."""
    if backend.postgres:
        from .postgres import wait_until_free

        store = backend.store()
        try:
            wait_until_free(store, [KEY, *(f"npc{i}" for i in range(NPCS))])
        finally:
            store.close()


def test_kill_9_during_forget_player_ends_fully_forgotten(backend: Backend, tmp_path: Path) -> None:
    template(backend)
    assert backend.traces(KEY, NAME), "the template must hold the player"
    rng = random.Random(20261130)
    landed = {"before": 0, "starting": 0, "pending": 0, "purging": 0, "purged": 0, "done": 0}
    resumed_total = 0
    longest = 0.12 if backend.postgres else 0.35  # (how long the forgetting takes, about)
    for attempt in range(KILLS):
        copy = backend.copy(tmp_path / f"attempt{attempt}.db")
        markers = run_and_kill([str(CHILD), KEY, *copy.target()], "go", rng.uniform(0.0, longest))
        where = "done" if "done" in markers else (markers[-1] if markers else "before")
        where = {"recording": "starting", "clearing": "purged", "cleared": "purged"}.get(where, where)
        landed[where] += 1
        wait_for_the_child_to_be_gone(copy)

        plugin = npc_memory.install(world=f"restart{attempt}", pack="village", store=copy.store(), seed=1)
        try:
            if plugin.privacy.resumed:
                resumed_total += 1
                assert where in ("starting", "pending", "purging", "purged"), (attempt, where)
            else:
                assert where not in ("pending", "purging"), (attempt, where)  # the record was stored
            if where in ("before", "starting") and not plugin.privacy.resumed:
                # the forgetting never began: the player is still whole, and is forgotten now
                assert KEY in plugin.storage.stored_players(), attempt
                plugin.privacy.forget_player(KEY, actor="test")
            assert KEY not in plugin.players() and KEY not in plugin.storage.stored_players(), (attempt, where, markers)
            assert all(KEY not in plugin.npc(n).bank.players for n in plugin.storage.stored_npcs())
            # nothing else is lost: every NPC, the other player and what is held about them
            assert sorted(plugin.storage.stored_npcs()) == sorted(f"npc{i}" for i in range(NPCS)), attempt
            assert plugin.storage.stored_players() == [OTHER], attempt
            assert "Bob likes apples" in [m.content for m in plugin.npc("npc7").bank.players[OTHER].all()]
        finally:
            npc_memory.uninstall(f"restart{attempt}")
        assert copy.traces(KEY, NAME) == [], (attempt, where, copy.traces(KEY, NAME))
        store = TinyDBStore(copy.path) if copy.url is None else copy.store()
        try:
            audit = store.read_audit().problems if copy.url is None else []
            assert store.pending_forgets() == []
        finally:
            store.close()
        assert not audit
        forgets = [e for e in copy.audit() if e.action == "forget"]
        assert forgets and all(KEY not in e.target for e in forgets)
        if plugin.privacy.resumed:
            # the restart's entry names who asked for the forgetting the crash interrupted
            assert forgets[-1].details == {"resumed": True} and forgets[-1].actor == "child"
        if copy.url is None:
            shutil.rmtree(copy.path)
    print(f"{backend!r}: {KILLS} kills: {landed}; {resumed_total} restarts finished an interrupted forgetting")
    assert landed["pending"] + landed["purging"] + landed["purged"] >= 3, landed
