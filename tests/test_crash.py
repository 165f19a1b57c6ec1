"""kill -9 at random moments while snapshots are written and checkpointed: the store
always loads, every document is one complete version, and nothing acknowledged as
saved (``save()`` returned, or a snapshot round was reported on disk) is lost."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec

from npc_memory.store import NpcDocument, TinyDBStore
from npc_memory.store.journal import Journal, frames

from .kill import run_and_kill

CHILD = Path(__file__).with_name("crash_child.py")
KILLS = 50


def torn_tail(db: Path) -> bool:
    """Whether a journal segment ends in part of a record (a kill during an append)."""
    journal = Journal(db / "journal")
    for number in journal.segments():
        data = journal.path(number).read_bytes()
        end = max((offset + 12 + len(payload) for offset, payload in frames(data, "segment")), default=0)
        if end != len(data):
            return True
    return False


def mid_checkpoint(db: Path) -> bool:
    """Whether a checkpoint was cut short: temporary files, or document files folded
    past the lsn the metadata file records (segments not yet deleted)."""
    if any(p.name.endswith(".tmp") for p in [*db.glob("*"), *(db / "docs").glob("*")]):
        return True
    meta = db / "meta.json"
    folded = msgspec.json.decode(meta.read_bytes()).get("journal", {}).get("1", {}).get("lsn", 0) if meta.exists() else 0
    for doc in (db / "docs").glob("*.json"):
        lsn = msgspec.json.decode(doc.read_bytes()).get("journal", {}).get("1", {}).get("lsn", 0)
        if lsn > folded:
            return True
    return False


def test_kill_9_mid_snapshot_never_corrupts_or_loses_acknowledged_state(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    rng = random.Random(20261129)
    acknowledged = 0
    torn = cut = 0
    landed = {"appending": 0, "folding": 0}  # kills that landed inside a journal append, a checkpoint slice
    for attempt in range(KILLS):
        capture = ("writer", "tick")[attempt % 2]  # who captures round documents
        printed = run_and_kill(  # markers may come before "ready"
            [str(CHILD), str(db), capture], "ready", rng.uniform(0.0, 0.4),
            before=("", "appending", "appended", "folding", "folded"),
        )
        lines = [line.split() for line in printed]
        markers = [words[0] for words in lines if words[0] in ("appending", "appended", "folding", "folded")]
        if markers and markers[-1] in landed:
            landed[markers[-1]] += 1
        promises = [words for words in lines if words[0] in ("saved", "round") and len(words) == 2]
        acknowledged = max([acknowledged, *(int(n) for _, n in promises)])
        torn += torn_tail(db)
        cut += mid_checkpoint(db)

        store = TinyDBStore(db, checkpoint_on_close=False)  # the lock died with the child: loading must succeed
        try:
            contents = store.load()
        finally:
            store.close()  # leaves the journal as the kill left it, for the next child
        npcs = [d for d in contents.documents.values() if isinstance(d, NpcDocument)]
        assert len(npcs) == 12 or (not acknowledged and len(npcs) < 12), attempt
        for doc in npcs:
            rounds = doc.relationships.by_player["alice"].interaction_count if doc.relationships.by_player else 0
            # One instant of the NPC, never a mix of two: between two steps, or between a step's
            # two calls (the writer copies a document at any instant between facade calls, so the
            # step's memory may be there before its interaction is counted).
            taken = doc.bank.next_id - 1
            assert taken in (rounds, rounds + 1), (attempt, doc.key, taken, rounds)
            if taken:
                assert doc.bank.world.episodic[-1].content == f"round {taken}", (attempt, doc.key)
            assert rounds >= acknowledged, (attempt, doc.key, rounds, acknowledged)  # nothing acknowledged lost
    assert acknowledged > 0
    print(f"{KILLS} kills, last acknowledged step {acknowledged}; {landed['appending']} landed in a journal "
          f"append ({torn} left a torn record), {landed['folding']} in a checkpoint slice, {cut} left a "
          f"checkpoint unfinished")
