"""The journal of the TinyDB store: CRC framing, torn tails, checkpoints that fold it
into the document files (also when cut short), lsns, and damage reporting."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from npc_memory.components import Relationship
from npc_memory.errors import StoreCorruptError, StoreVersionError
from npc_memory.store import NpcDocument, StoreMeta, TinyDBStore, encode_document
from npc_memory.store import tinydb_store as tinydb_module
from npc_memory.store.journal import FRAME_SIZE, Journal, frame, frames
from npc_memory.store.records import (
    NpcCapture,
    NpcPatch,
    Put,
    SegmentHeader,
    capture_document,
    diff,
    record_encoder,
)
from npc_memory.store.tinydb_store import file_name

from .test_store_contract import npc, player


def segment(db: Path) -> Path:
    [path] = sorted((db / "journal").glob("*.log"))
    return path


def lsn_in(path: Path) -> int:
    return int(msgspec.json.decode(path.read_bytes())["journal"]["1"]["lsn"])


# ---------------------------------------------------------------------- framing


def test_frames_round_trip_and_a_torn_tail_is_dropped_at_every_byte() -> None:
    payloads = [b"first", b"second record", b"x" * 300]
    data = b""
    for payload in payloads:
        data += frame(len(data), payload)
    assert [bytes(p) for _, p in frames(data, "s")] == payloads
    last = len(data) - FRAME_SIZE - 300
    for cut in range(last, len(data)):  # a crash anywhere in the last record's append
        assert [bytes(p) for _, p in frames(data[:cut], "s")] == payloads[:2]
    flipped = bytearray(data)
    flipped[-1] ^= 1  # a last record that reached the disk damaged: dropped, never loaded half
    assert [bytes(p) for _, p in frames(bytes(flipped), "s")] == payloads[:2]


def test_damage_before_a_valid_record_is_reported_not_dropped() -> None:
    data = frame(0, b"first")
    second = len(data)
    data += frame(second, b"second")
    data += frame(len(data), b"third")
    damaged = bytearray(data)
    damaged[second + FRAME_SIZE] ^= 0xFF
    with pytest.raises(StoreCorruptError, match=f"damaged journal record at byte {second}"):
        list(frames(bytes(damaged), "seg"))
    assert [bytes(p) for _, p in frames(bytes(damaged), "seg", skip_damage=True)] == [b"first", b"third"]


def test_a_frame_only_validates_at_its_own_offset() -> None:
    inner = frame(0, b"smuggled")  # a record-like byte run inside a payload (e.g. a memory's text)
    data = frame(0, b"ok") + frame(FRAME_SIZE + 2, inner)
    assert [bytes(p) for _, p in frames(data, "s")] == [b"ok", inner]
    assert [bytes(p) for _, p in frames(data[:-1], "s")] == [b"ok"]  # torn: the inner copy is not a record here


# ---------------------------------------------------------------------- the store's journal


def test_writes_go_to_the_journal_and_load_replays_it(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda")), encode_document(player("alice"))], StoreMeta(world="v", clock=5.0))
    store.write([encode_document(npc("hilda", trust=0.9))])
    store.delete(["alice"])
    assert list((tmp_path / "v.db" / "docs").glob("*.json")) == []  # files change at checkpoints only
    contents = store.load()
    assert contents.documents == {"hilda": npc("hilda", trust=0.9)}
    assert contents.meta == StoreMeta(world="v", clock=5.0) == store.read_meta()
    store.close()  # a small journal is folded on close
    assert not list((tmp_path / "v.db" / "journal").glob("*.log"))
    assert [p.name for p in (tmp_path / "v.db" / "docs").glob("*.json")] == [file_name("hilda")]
    reopened = TinyDBStore(tmp_path / "v.db")
    assert reopened.load().documents == {"hilda": npc("hilda", trust=0.9)}
    assert reopened.read_meta() == StoreMeta(world="v", clock=5.0)
    reopened.close()


def test_lsns_keep_growing_across_checkpoints_and_sessions(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda", trust=0.1))])  # no metadata at all
    store.checkpoint()
    first = lsn_in(tmp_path / "v.db" / "docs" / file_name("hilda"))
    store.close()
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc("hilda", trust=0.7))])
    assert store.reserve_lsn() > first + 1
    store.close()
    store = TinyDBStore(tmp_path / "v.db", checkpoint_on_close=False)
    assert store.load().documents["hilda"] == npc("hilda", trust=0.7)  # not skipped as already folded
    store.close()


def patched(store: TinyDBStore, key: str, trusts: list[float]) -> NpcDocument:
    """Write ``key`` whole, then a patch per trust value, as the snapshot writer does."""
    document = npc(key, trust=0.5)
    lsn = store.reserve_lsn()
    store.append([Put(lsn=lsn, key=key, kind="npc", data=encode_document(document).data)])
    base = capture_document(document)
    assert isinstance(base, NpcCapture)
    for trust in trusts:
        document.relationships.by_player["alice"] = Relationship(trust=trust, version=3)
        episodic = document.bank.players["alice"].episodic
        episodic.append(msgspec.structs.replace(episodic[0], id=f"m{document.bank.next_id}"))
        document.bank.next_id += 1
        new = capture_document(document)
        assert isinstance(new, NpcCapture)
        patch = diff(base, new, lsn=store.reserve_lsn(), base_lsn=lsn)
        assert patch is not None
        store.append([patch])
        base, lsn = new, patch.lsn
    return msgspec.json.decode(encode_document(document).data, type=NpcDocument)


def test_patches_replay_and_fold_into_the_files(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db")
    expected = patched(store, "hilda", [0.6, 0.7, 0.8])
    assert store.load().documents["hilda"] == expected
    store.checkpoint()
    path = tmp_path / "v.db" / "docs" / file_name("hilda")
    assert msgspec.json.decode(path.read_bytes())["npcs"]["1"]["relationships"]["by_player"]["alice"]["trust"] == 0.8
    store.close()
    reopened = TinyDBStore(tmp_path / "v.db")
    assert reopened.load().documents["hilda"] == expected
    reopened.close()


def test_a_checkpoint_cut_short_never_applies_a_patch_twice(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_on_close=False)
    expected = {key: patched(store, key, [0.1, 0.2]) for key in ("a", "b", "c")}
    store.write([encode_document(npc("gone"))])
    store.delete(["gone"])
    fold = store._begin_fold(strict=True)
    assert fold is not None
    store._fold_step(fold, deadline=0.0)  # one document folded, then the process dies
    store.close()
    folded = [k for k in ("a", "b", "c") if (tmp_path / "v.db" / "docs" / file_name(k)).exists()]
    assert len(folded) == 1
    store = TinyDBStore(tmp_path / "v.db")
    assert store.load().documents == expected  # the folded file is not patched again
    store.checkpoint()
    assert not list((tmp_path / "v.db" / "journal").glob("*.log"))
    assert store.load().documents == expected
    store.close()


def test_the_writer_checkpoints_in_slices_when_the_journal_grows(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1)
    store.write([encode_document(npc(f"n{i}")) for i in range(5)])
    assert store.maintain(deadline=0.0)  # started, one document per slice at a zero deadline
    while store.maintain(deadline=0.0):
        store.write([encode_document(npc("late"))])  # appends go on meanwhile, to a new segment
    assert {p.name for p in (tmp_path / "v.db" / "docs").glob("*.json")} >= {file_name(f"n{i}") for i in range(5)}
    assert set(store.load().documents) == {"late", *(f"n{i}" for i in range(5))}
    store.close()


def test_folding_a_document_pauses_between_its_changes(tmp_path: Path) -> None:
    """A checkpoint gives the writer's pause a turn between the steps of one document's
    fold (its file read, each change, its encoding), not only between documents: a
    large document's fold is no single long stretch the game's tick waits behind."""
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1)
    expected = patched(store, "hilda", [0.6, 0.7, 0.8, 0.9])
    pauses: list[None] = []
    while store.maintain(10.0, lambda: pauses.append(None)):
        pass
    assert len(pauses) >= 1 + 4 + 1  # the document, each of its 4 changes, its encoding
    assert store.load().documents["hilda"] == expected
    store.close()


def test_reading_a_long_journal_for_a_checkpoint_is_sliced_too(tmp_path: Path) -> None:
    """The records are read a slice at a time (the writer goes back to new snapshot
    batches in between), and appends made meanwhile are kept."""
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1)
    count = 3 * tinydb_module.PAUSE_EVERY_RECORDS
    store.write([encode_document(npc(f"n{i}")) for i in range(count)])
    pauses: list[int] = []
    slices = 0
    while store.maintain(0.0, lambda: pauses.append(1)):
        slices += 1
        if slices == 1:  # still reading: nothing folded yet
            assert not list((tmp_path / "v.db" / "docs").glob("*.json"))
            store.write([encode_document(npc("late"))])
    assert slices > count  # a slice to start reading, a few to read, one per document folded
    assert len(pauses) >= 3
    assert set(store.load().documents) == {"late", *(f"n{i}" for i in range(count))}
    store.close()


def test_a_torn_append_loses_only_that_append(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    store = TinyDBStore(db, checkpoint_on_close=False)
    store.write([encode_document(npc("hilda", trust=0.1))], StoreMeta(clock=1.0))
    before = segment(db).stat().st_size
    store.write([encode_document(npc("hilda", trust=0.9)), encode_document(npc("brandt"))], StoreMeta(clock=2.0))
    store.close()
    full = segment(db).read_bytes()
    for cut in range(before, len(full), 7):  # every prefix a crash during the append can leave
        segment(db).write_bytes(full[:cut])
        reader = TinyDBStore(db, checkpoint_on_close=False)
        contents = reader.load()
        reader.close()
        assert contents.documents["hilda"] in (npc("hilda", trust=0.1), npc("hilda", trust=0.9))
        assert contents.meta is not None and contents.meta.clock in (1.0, 2.0)
        if contents.meta.clock == 2.0:  # the metadata is the append's last record
            assert set(contents.documents) == {"hilda", "brandt"}


def test_a_new_append_never_follows_a_torn_tail(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    store = TinyDBStore(db, checkpoint_on_close=False)
    store.write([encode_document(npc("hilda", trust=0.1))])
    store.close()
    path = segment(db)
    path.write_bytes(path.read_bytes()[:-5])  # the session died mid-append
    store = TinyDBStore(db, checkpoint_on_close=False)
    store.write([encode_document(npc("brandt"))])
    store.close()
    assert len(list((db / "journal").glob("*.log"))) == 2  # a new session writes a new segment
    store = TinyDBStore(db)
    assert set(store.load().documents) == {"brandt"}
    store.close()


def test_a_patch_whose_base_is_missing_is_damage_and_repair_skips_it(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    store = TinyDBStore(db, checkpoint_on_close=False)
    store.write([encode_document(npc("hilda"))])
    store.append([NpcPatch(lsn=store.reserve_lsn(), key="hilda", base=999, name="Hilda", room="void")])
    with pytest.raises(StoreCorruptError, match=r"change at lsn \d+ applies to lsn 999"):
        store.load()
    problems = store.checkpoint(strict=False)
    assert len(problems) == 1 and "does not apply" in problems[0]
    assert store.load().documents["hilda"] == npc("hilda")
    store.close()


def test_segments_of_other_schema_versions_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    TinyDBStore(db).close()
    journal = Journal(db / "journal")
    journal.open_segment(record_encoder.encode(SegmentHeader(schema_version=99)))
    journal.close()
    store = TinyDBStore(db, checkpoint_on_close=False)
    with pytest.raises(StoreVersionError, match="schema version 99, newer"):
        store.load()
    store.close()
    os.remove(journal.path(journal.segments()[0]))
    journal.open_segment(record_encoder.encode(SegmentHeader(schema_version=1)))
    journal.close()
    store = TinyDBStore(db, checkpoint_on_close=False)
    with pytest.raises(StoreVersionError, match="written with schema version 1"):
        store.load()
    store.close()


def test_close_leaves_a_journal_that_changes_many_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tinydb_module, "CLOSE_CHECKPOINT_KEYS", 2)
    store = TinyDBStore(tmp_path / "v.db")
    store.write([encode_document(npc(f"n{i}")) for i in range(3)])
    store.close()  # closing stays fast: the next open replays
    assert list((tmp_path / "v.db" / "journal").glob("*.log"))
    store = TinyDBStore(tmp_path / "v.db")
    assert len(store.load().documents) == 3
    assert store.maintain(deadline=float("inf")) is False  # an earlier session's journal: folded when idle
    assert not list((tmp_path / "v.db" / "journal").glob("*.log"))
    store.close()


def test_a_checkpoint_finishes_the_one_in_progress_and_folds_what_came_after(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1)
    store.write([encode_document(npc(f"n{i}")) for i in range(3)])
    assert store.maintain(deadline=0.0)  # a checkpoint begins: one document folded
    store.write([encode_document(npc("late", trust=0.9))])  # appended to a new segment meanwhile
    store.checkpoint()
    assert not list((tmp_path / "v.db" / "journal").glob("*.log"))
    assert {p.name for p in (tmp_path / "v.db" / "docs").glob("*.json")} == {file_name(k) for k in ("n0", "n1", "n2", "late")}
    store.close()


def test_a_checkpoint_reads_each_record_as_it_folds_it_not_the_whole_journal(tmp_path: Path) -> None:
    """Memory: a checkpoint in progress holds where each record is, not the journal's
    bytes (a 10k-NPC world's journal reaches 64 MB before its checkpoint)."""
    import tracemalloc

    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1)
    for i in range(200):
        store.write([encode_document(npc(f"n{i}", memories=300))])
    journal = sum(p.stat().st_size for p in (tmp_path / "v.db" / "journal").glob("*.log"))
    assert journal > 4_000_000
    tracemalloc.start()
    try:
        while store.maintain(deadline=0.0):
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < journal / 3, (peak, journal)  # (a 1 MB read buffer and the documents being folded)
    assert set(store.load().documents) == {f"n{i}" for i in range(200)}
    assert not list((tmp_path / "v.db" / "journal").glob("*.log"))
    store.close()


def test_a_record_changed_on_disk_during_a_checkpoint_is_damage_and_the_journal_is_kept(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_on_close=False)
    store.write([encode_document(npc("a", trust=0.1)), encode_document(npc("b", trust=0.2))])
    fold = store._begin_fold(strict=True)
    assert fold is not None
    [entry] = fold.entries["b"]
    path = Journal(tmp_path / "v.db" / "journal", create=False).path(entry.segment)
    data = bytearray(path.read_bytes())
    data[entry.offset + FRAME_SIZE + entry.length // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match=r"\.log@\d+ is damaged: journal record changed since it was first read"):
        store._fold_step(fold, deadline=float("inf"))
    docs = tmp_path / "v.db" / "docs"
    assert (docs / file_name("a")).exists() and not (docs / file_name("b")).exists()
    assert list((tmp_path / "v.db" / "journal").glob("*.log")), "the journal keeps what could not be folded"
    store.close()


def test_a_damaged_length_is_damage_not_a_4_gb_read(tmp_path: Path) -> None:
    """A record's length is not covered by its CRC: one past the segment's end is taken
    for a torn tail (or damage), never read."""
    import tracemalloc

    store = TinyDBStore(tmp_path / "v.db", checkpoint_on_close=False)
    store.write([encode_document(npc("a"))])
    store.write([encode_document(npc("b"))])
    store.close()
    path = segment(tmp_path / "v.db")
    journal = Journal(tmp_path / "v.db" / "journal", create=False)
    [number] = journal.segments()
    offsets = [offset for offset, _ in journal.records(number)]
    data = bytearray(path.read_bytes())
    data[offsets[-1] + 4 : offsets[-1] + 8] = (0xFFFFFFF0).to_bytes(4, "little")  # the last record's length
    path.write_bytes(bytes(data))
    tracemalloc.start()
    try:
        kept = [offset for offset, _ in journal.records(number)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept == offsets[:-1]  # a torn tail: dropped
    assert peak < 10_000_000
