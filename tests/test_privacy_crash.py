"""kill -9 at random moments during ``forget_player``: after the restart the player is
fully forgotten — no store file holds their key or name — whether the kill landed
before the forgetting began (the player is intact, and forgetting again works), in
the middle (the restart finishes it, and the audit log says it was resumed), or after."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import npc_memory
from npc_memory.store import TinyDBStore

from .kill import run_and_kill
from .privacy_world import KEY, NAME, build, fold, run, traces

CHILD = Path(__file__).with_name("forget_child.py")
KILLS = 24


def template(db: Path) -> None:
    """A store holding the player in documents, the journal, older generations, a
    damaged copy and a leftover temporary file."""
    plugin = npc_memory.install(world="template", pack="village", store=db, seed=1)
    build(plugin, npcs=30)
    run("template", 20)
    plugin.save()
    fold(plugin)
    for i in range(30):  # a second generation of every NPC file: .prev files hold the player
        plugin.remember(f"npc{i}", None, f"A quiet day {i}")
    plugin.save()
    fold(plugin)
    plugin.remember("npc3", "zqxalice", f"{NAME} came back", tags=["helpful"])  # left in the journal
    plugin.save()
    npc_memory.uninstall("template")
    doc = next((db / "docs").glob("npc5-*.json"))
    (doc.parent / (doc.name + ".broken")).write_bytes(doc.read_bytes()[:200])
    (doc.parent / (doc.name + ".tmp")).write_bytes(doc.read_bytes())
    # the template's own journal is folded at close: give the journal something to hold
    store = TinyDBStore(db, checkpoint_on_close=False)
    store.load()
    store.append([])
    store.close()


def test_kill_9_during_forget_player_ends_fully_forgotten(tmp_path: Path) -> None:
    base = tmp_path / "template.db"
    template(base)
    assert traces(base, KEY, NAME), "the template must hold the player"
    rng = random.Random(20261130)
    landed = {"before": 0, "starting": 0, "pending": 0, "purging": 0, "purged": 0, "done": 0}
    resumed_total = 0
    for attempt in range(KILLS):
        db = tmp_path / f"attempt{attempt}.db"
        shutil.copytree(base, db)
        markers = run_and_kill([str(CHILD), str(db), KEY], "go", rng.uniform(0.0, 0.35))
        where = "done" if "done" in markers else (markers[-1] if markers else "before")
        where = {"recording": "starting", "clearing": "purged", "cleared": "purged"}.get(where, where)
        landed[where] += 1

        plugin = npc_memory.install(world=f"restart{attempt}", pack="village", store=db, seed=1)
        try:
            if plugin.resumed:
                resumed_total += 1
                assert where in ("starting", "pending", "purging", "purged"), (attempt, where)
            else:
                assert where not in ("pending", "purging"), (attempt, where)  # the record was on disk
            if where in ("before", "starting") and not plugin.resumed:
                # the forgetting never began: the player is still whole, and is forgotten now
                assert KEY in plugin.stored_players(), attempt
                plugin.forget_player(KEY, actor="test")
            assert KEY not in plugin.players() and KEY not in plugin.stored_players()
            assert all(KEY not in plugin.npc(n).bank.players for n in plugin.stored_npcs())
        finally:
            npc_memory.uninstall(f"restart{attempt}")
        assert traces(db, KEY, NAME) == [], (attempt, where, traces(db, KEY, NAME))
        store = TinyDBStore(db)
        try:
            audit = store.read_audit()
            assert store.pending_forgets() == []
        finally:
            store.close()
        assert not audit.problems
        forgets = [e for e in audit.entries if e.action == "forget"]
        assert forgets and all(KEY not in e.target for e in forgets)
        if plugin.resumed:
            assert forgets[-1].details == {"resumed": True} and forgets[-1].actor == "restart"
        shutil.rmtree(db)
    print(f"{KILLS} kills: {landed}; {resumed_total} restarts finished an interrupted forgetting")
    assert landed["pending"] + landed["purging"] + landed["purged"] >= 3, landed
