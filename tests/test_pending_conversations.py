"""A finished conversation waits for extraction in its NPC's working memory, so the
NPC's document never shows a conversation ended without either its lines or the
memories they gave: a crash after that document reached the disk, and before the
store's metadata listed the extraction job, loses nothing.

The crash is a copy of the store directory taken while the real writer thread is held
inside the append of a round's metadata (the ``GateStore`` of the unsaved-seconds
contract): what a killed process leaves.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

import npc_memory
from npc_memory.components import PendingConversation
from npc_memory.content import validate_pack
from npc_memory.services import persistence
from npc_memory.store import NpcDocument, TinyDBStore

from .conftest import tick
from .test_unsaved_contract import WAIT, GateStore


@pytest.fixture(autouse=True)
def writer_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread captures each round, in groups, as on Python 3.12+ or beside a
    running FrameCollector (the tests stop it between groups)."""
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: True)

NPCS = 600
"""More NPCs changed in a round than one group of its documents holds (512), so the
round's first group is durable before its metadata is written."""
LINE = "You saved my life, thank you friend"
"""A line the rules turn into exactly one memory."""


def village(world: str, store: str | Path | TinyDBStore) -> npc_memory.MemoryPlugin:
    """The village pack on count caps alone (what a few ticks do does not hang on the
    machine's speed); a tick is a game second."""
    return npc_memory.install(world=world, store=store, seed=5, deterministic=True)


def held_memories(plugin: npc_memory.MemoryPlugin, npc: str, player: str) -> list[str]:
    return [m.content for m in plugin.memories(npc, player)]


def extract_all(plugin: npc_memory.MemoryPlugin, world: str) -> None:
    for _ in range(20):
        tick(world, 1)
        if not plugin.npc("n0000").working.pending:
            return


def one_conversation(world: str, store: Path) -> tuple[npc_memory.MemoryPlugin, str]:
    """A village of one NPC, n0000, and Alice, who has just ended a conversation with
    it (the rules make one memory of it); returns the plugin and the conversation's id."""
    plugin = village(world, store)
    plugin.add_npc(key="n0000", room="square")
    plugin.add_player(key="alice", name="Alice")
    plugin.say("n0000", "alice", "Alice", LINE)
    ended = plugin.end_conversation("n0000", "alice")
    assert ended is not None
    return plugin, ended.conversation


def test_a_conversation_ended_mid_round_survives_a_crash_before_the_rounds_metadata(tmp_path: Path) -> None:
    store = GateStore(tmp_path / "live")
    plugin = village("pending-live", store)
    for i in range(NPCS):
        plugin.add_npc(key=f"n{i:04d}", room="square")
    plugin.add_player(key="alice", name="Alice", consent=True)
    plugin.save()
    tick("pending-live", 1)
    # The conversation's NPC changes first: the round takes it in its first group.
    plugin.say("n0000", "alice", "Alice", LINE)
    ended = plugin.end_conversation("n0000", "alice")
    assert ended is not None and ended.status == "queued"
    plugin.remove("alice")  # its extraction waits for the player: nothing applied before the crash
    for i in range(1, NPCS):
        plugin.remember(f"n{i:04d}", None, f"The well was dry on day {i}")
    store.freeze(store.appends, None)  # the next round's metadata: its documents go first
    for _ in range(200):
        tick("pending-live", 1)
        if store.frozen.wait(0.01):
            break
    assert store.frozen.is_set(), "no round reached its metadata"
    crash = tmp_path / "crash"
    shutil.copytree(tmp_path / "live", crash)
    store.release()
    assert store.resumed.wait(WAIT)
    npc_memory.uninstall("pending-live")

    # What the crash left: the NPC's document with the conversation pending, and
    # metadata (of the save before) that knows no extraction job.
    left = TinyDBStore(crash)
    contents = left.load()
    left.close()
    assert contents.meta is not None and contents.meta.pending_extractions == []
    saved = contents.documents["n0000"]
    assert isinstance(saved, NpcDocument)
    assert [p.conversation for p in saved.working.pending] == [ended.conversation]
    assert "alice" not in saved.working.open  # the conversation shows as ended

    reloaded = village("pending-reloaded", crash)
    reloaded.add_npc(key="n0000")
    reloaded.add_player(key="alice")
    extract_all(reloaded, "pending-reloaded")
    kept = held_memories(reloaded, "n0000", "alice")
    assert len([m for m in kept if "saved" in m.lower()]) == 1, kept
    working = reloaded.npc("n0000").working
    assert working.pending == [] and ended.conversation in working.extracted
    npc_memory.uninstall("pending-reloaded")


def test_a_job_both_the_metadata_and_the_document_hold_is_applied_once(tmp_path: Path) -> None:
    plugin, conversation = one_conversation("pending-both", tmp_path / "store")
    plugin.remove("alice")  # parked: saved as pending in the metadata and in the document
    plugin.save()
    npc_memory.uninstall("pending-both")

    reloaded = village("pending-both-again", tmp_path / "store")
    reloaded.add_npc(key="n0000")
    assert [p.conversation for p in reloaded.npc("n0000").working.pending] == [conversation]
    reloaded.add_player(key="alice")
    extract_all(reloaded, "pending-both-again")
    kept = held_memories(reloaded, "n0000", "alice")
    assert len([m for m in kept if "saved" in m.lower()]) == 1, kept
    assert reloaded.npc("n0000").working.pending == []
    assert reloaded.extraction.stats.duplicates == 0
    npc_memory.uninstall("pending-both-again")


def test_a_conversation_leaves_the_working_memory_when_its_memories_are_applied(tmp_path: Path) -> None:
    plugin, conversation = one_conversation("pending-applied", tmp_path / "store")
    pending = plugin.npc("n0000").working.pending
    assert [(p.conversation, p.player, p.player_name) for p in pending] == [(conversation, "alice", "Alice")]
    assert pending[0].turns[-1].text == LINE
    extract_all(plugin, "pending-applied")
    assert plugin.npc("n0000").working.pending == []
    assert any("saved" in m.lower() for m in held_memories(plugin, "n0000", "alice"))
    npc_memory.uninstall("pending-applied")


def test_a_conversation_dropped_for_a_full_queue_does_not_wait(tmp_path: Path) -> None:
    data = npc_memory.load_pack("village").model_dump()
    data["budgets"].update(extraction_queue=1, extraction_overflow="drop")
    plugin = npc_memory.install(world="pending-full", pack=validate_pack(data), seed=5, deterministic=True)
    plugin.add_npc(key="n0000", room="square")
    plugin.add_player(key="alice")
    plugin.add_player(key="bob")
    statuses = []
    for player in ("alice", "bob"):
        plugin.say("n0000", player, player, LINE)
        ended = plugin.end_conversation("n0000", player)
        assert ended is not None
        statuses.append(ended.status)
    assert statuses == ["queued", "dropped"]
    assert [p.player for p in plugin.npc("n0000").working.pending] == ["alice"]
    npc_memory.uninstall("pending-full")


def test_forgetting_a_player_takes_their_pending_conversations_from_live_and_stored_npcs(tmp_path: Path) -> None:
    plugin = village("pending-forget", tmp_path / "store")
    for key in ("n0000", "n0001", "n0002"):
        plugin.add_npc(key=key, room="square")
    plugin.add_player(key="alice", name="Alice")
    plugin.add_player(key="bob", name="Bob")
    plugin.say("n0000", "bob", "Bob", LINE)
    plugin.end_conversation("n0000", "bob")
    plugin.say("n0001", "bob", "Bob", LINE)
    plugin.end_conversation("n0001", "bob")
    plugin.say("n0002", "alice", "Alice", "Bob told me he saved a child")  # names the player
    plugin.end_conversation("n0002", "alice")
    plugin.say("n0000", "alice", "Alice", LINE)
    plugin.end_conversation("n0000", "alice")
    plugin.remove("alice")
    plugin.remove("bob")
    plugin.remove("n0001")  # a stored document: scrubbed in the store
    plugin.privacy.forget_player("bob")
    tick("pending-forget", 3)
    plugin.storage.flush()
    assert [p.player for p in plugin.npc("n0000").working.pending] == ["alice"]
    assert plugin.npc("n0002").working.pending == []
    npc_memory.uninstall("pending-forget")
    left = TinyDBStore(tmp_path / "store")
    contents = left.load()
    left.close()
    stored = {key: doc.working.pending for key, doc in contents.documents.items() if key.startswith("n")}
    assert all(isinstance(p, PendingConversation) for pending in stored.values() for p in pending)
    assert [p.player for p in stored["n0000"]] == ["alice"]
    assert stored["n0001"] == [] and stored["n0002"] == []


def stored_pending(path: Path, npc: str) -> list[str]:
    """The lines of the conversations ``npc``'s document holds as pending in the store."""
    store = TinyDBStore(path)
    document = store.load().documents[npc]
    store.close()
    assert isinstance(document, NpcDocument)
    return [turn.text for pending in document.working.pending for turn in pending.turns]


def test_a_conversation_naming_a_player_forgotten_before_it_ended_never_waits(tmp_path: Path) -> None:
    """Its job is dropped: its lines are not kept, in the live NPC, on disk or after a
    restart (which knows nothing of the forgetting: what is forgotten is gone)."""
    plugin = village("named-1", tmp_path / "store")
    plugin.add_npc(key="n0000", room="square")
    for key in ("alice", "bob", "carol"):
        plugin.add_player(key=key, name=key.title())
    plugin.privacy.forget_player("alice")
    plugin.say("n0000", "bob", "Bob", "I stole Alice's purse at the market yesterday")
    plugin.end_conversation("n0000", "bob")
    assert plugin.npc("n0000").working.pending == []
    plugin.privacy.forget_player("carol")  # drops with every pattern so far: nothing left behind
    plugin.remove("n0000")
    tick("named-1", 5)
    npc_memory.uninstall("named-1")
    assert stored_pending(tmp_path / "store", "n0000") == []
    reloaded = village("named-2", tmp_path / "store")
    reloaded.add_npc(key="n0000")
    reloaded.add_player(key="bob")
    tick("named-2", 10)
    assert not [m for m in held_memories(reloaded, "n0000", "bob") if "alice" in m.lower()]
    npc_memory.uninstall("named-2")


def test_a_conversation_resumed_after_a_crash_is_dropped_when_its_player_is_forgotten(tmp_path: Path) -> None:
    """The store's metadata (and so the clock restored) is older than the NPC's
    document: the conversations it holds as pending ended later than the restored
    clock. Forgetting their player right after the restart still drops every one, and
    no file keeps their lines."""
    data = npc_memory.load_pack("village").model_dump()
    data["budgets"].update(extraction_apply_per_tick=1)  # results wait, read, in line
    pack = validate_pack(data)
    db = tmp_path / "store"
    plugin = npc_memory.install(world="clock-1", store=db, pack=pack, seed=5, deterministic=True)
    plugin.add_npc(key="n0000", room="square")
    plugin.add_player(key="alice", name="Alice", consent=True)
    tick("clock-1", 100)
    plugin.save()
    older = plugin.clock.now
    tick("clock-1", 100)
    for i in range(3):
        plugin.say("n0000", "alice", "Alice", f"{LINE} {i}")
        plugin.end_conversation("n0000", "alice")
    plugin.remove("alice")  # nothing applied before the crash
    npc_memory.uninstall("clock-1")
    store = TinyDBStore(db)  # the crash: the documents on disk, the metadata of the save before
    meta = store.read_meta()
    assert meta is not None
    store.write_meta(msgspec.structs.replace(meta, pending_extractions=[], clock=older))
    store.close()

    plugin = npc_memory.install(world="clock-2", store=db, pack=pack, seed=5, deterministic=True)
    plugin.add_npc(key="n0000")
    assert len(plugin.npc("n0000").working.pending) == 3
    assert all(job.ended_at <= plugin.clock.now for job in plugin.extraction.pending())
    plugin.add_player(key="alice")
    tick("clock-2", 1)  # one result applied, the others read and waiting
    assert plugin.extraction.ready
    report = plugin.privacy.forget_player("alice")
    tick("clock-2", 5)
    plugin.save()
    assert plugin.extraction.pending() == [] and plugin.npc("n0000").working.pending == []
    assert report.counts.get("files_still_matching", 0) == 0
    npc_memory.uninstall("clock-2")
    store = TinyDBStore(db)
    meta = store.read_meta()
    store.close()
    assert meta is not None and [job for job in meta.pending_extractions if job.player == "alice"] == []
    assert stored_pending(db, "n0000") == []


def test_forgetting_a_player_keeps_the_conversations_whose_jobs_it_keeps(tmp_path: Path) -> None:
    """The pending conversations forgetting takes are exactly the jobs it drops: one that
    only an NPC's key (in the conversation's id) makes look like the player stays, with
    its job."""
    plugin = village("kept", tmp_path / "store")
    plugin.add_npc(key="old-tom", room="square")
    for key in ("tom", "alice"):
        plugin.add_player(key=key, name=key.title())
    plugin.say("old-tom", "alice", "Alice", LINE)
    plugin.end_conversation("old-tom", "alice")
    plugin.privacy.forget_player("tom")
    pending = [p.conversation for p in plugin.npc("old-tom").working.pending]
    assert pending == [job.conversation for job in plugin.extraction.pending()] == ["old-tom/alice/1"]
    npc_memory.uninstall("kept")
