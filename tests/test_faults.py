"""Faults while the game runs: kills, a full disk, a size limit, a read-only store, a
removed directory, a removed lock. The tick never raises, nothing in memory is lost,
and the store never ends up silently wrong."""

from __future__ import annotations

import contextlib
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import esper
import pytest

import npc_memory
from npc_memory.cli import main
from npc_memory.content import load_pack, validate_pack
from npc_memory.errors import StoreError
from npc_memory.events import StoreOwnershipLost
from npc_memory.store import NpcDocument, TinyDBStore
from npc_memory.store.tools import import_store

from .conftest import tick
from .kill import run_and_kill

CONVERSATION_CHILD = Path(__file__).with_name("conversation_crash_child.py")
CONVERSATION_KILLS = 16


def test_every_acknowledged_conversation_survives_a_kill_exactly_once(tmp_path: Path) -> None:
    db = tmp_path / "talk.db"
    rng = random.Random(20261130)
    ended: list[str] = []  # every conversation ended, in order, over all the children
    acknowledged: set[str] = set()
    for attempt in range(CONVERSATION_KILLS):
        capture = ("writer", "tick")[attempt % 2]
        printed = run_and_kill([str(CONVERSATION_CHILD), str(db), capture], "ready", rng.uniform(0.3, 1.0))
        words = [line.split() for line in printed]
        mine: list[str] = []
        promised: set[str] = set()
        for word, value in words:
            if word == "ended":
                mine.append(value)
            elif word in ("saved", "round"):
                promised.update(mine[: int(value)])
        ended += mine
        acknowledged |= promised
        store = TinyDBStore(db, checkpoint_on_close=False)
        try:
            contents = store.load()
        finally:
            store.close()
        assert contents.meta is not None
        pending = {job.conversation for job in contents.meta.pending_extractions}
        for conversation in promised:
            document = contents.documents[conversation.split("/")[0]]
            assert isinstance(document, NpcDocument)
            assert conversation in document.working.extracted or conversation in pending, (attempt, conversation)
    assert len(acknowledged) > 50
    # Restarted, every acknowledged conversation is applied, and only once.
    data = load_pack("village").model_dump()
    data["memory"].update(episodic_cap=100_000, decay_interval=10.0**9)
    plugin = npc_memory.install(world="after", pack=validate_pack(data), store=db, seed=1)
    for i in range(6):
        plugin.add_npc(key=f"npc{i}", archetype="blacksmith")
    plugin.add_player(key="alice", consent=True)
    esper.switch_world("after")
    while plugin.extraction.pending():
        esper.process(0.5)
    esper.switch_world("default")
    counts: dict[str, int] = {}
    for i in range(6):
        for memory in plugin.memories(f"npc{i}", "alice"):
            assert memory.source_conversation is not None
            counts[memory.source_conversation] = counts.get(memory.source_conversation, 0) + 1
    assert {c: counts.get(c, 0) for c in acknowledged} == dict.fromkeys(acknowledged, 1)
    npc_memory.uninstall("after")


# ---------------------------------------------------------------------- failing disks


@contextlib.contextmanager
def small_disk(where: Path, size: str = "2m") -> Iterator[Path]:
    """A real filesystem of ``size`` mounted at ``where`` (tmpfs; needs root)."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; returns the filler file (delete it to free the space)."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as handle:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * size)
    return filler


def leftovers(db: Path) -> list[str]:
    return sorted(p.name for p in db.rglob("*") if p.name.endswith(".tmp"))


def pack(interval: float = 1.0) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=interval)
    data["memory"].update(episodic_cap=1000)
    return validate_pack(data)


def run(world: str, ticks: int, plugin: npc_memory.MemoryPlugin) -> None:
    """Tick (never raising), letting the store keep up."""
    for _ in range(ticks):
        tick(world, 1)
        plugin.storage.flush()


def stored(db: Path) -> dict[str, int]:
    """Memories per NPC in the store at ``db``."""
    store = TinyDBStore(db)
    try:
        contents = store.load()
    finally:
        store.close()
    return {k: d.bank.count() for k, d in contents.documents.items() if isinstance(d, NpcDocument)}


def test_a_full_disk_never_stops_the_game_leaves_no_temporary_files_and_loses_nothing(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        db = disk / "w.db"
        plugin = npc_memory.install(world="w", pack=pack(), store=db, seed=1)
        for i in range(5):
            plugin.add_npc(key=f"npc{i}")
        plugin.save()
        filler = fill(disk)
        for n in range(60):  # memories while the disk is full, across rounds and checkpoint attempts
            plugin.remember(f"npc{n % 5}", None, f"event {n} " + "x" * 200)
            tick("w", 1)
            plugin.storage.flush()
        assert plugin.health().status == "failing" and "No space left on device" in plugin.health().reasons[0]
        assert plugin.metrics()["store"]["write_failures"] >= 3
        assert leftovers(db) == []
        with pytest.raises(StoreError, match="stays installed"):
            npc_memory.uninstall("w")
        filler.unlink()  # space comes back: the next rounds write everything
        run("w", 5, plugin)
        assert plugin.health().status == "ok"
        npc_memory.uninstall("w")
        assert stored(db) == dict.fromkeys((f"npc{i}" for i in range(5)), 12)
        assert leftovers(db) == []


def test_a_store_read_only_at_install_is_a_clear_error_and_tools_still_read_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with small_disk(tmp_path / "disk") as disk:
        db = disk / "w.db"
        plugin = npc_memory.install(world="w", store=db)
        plugin.add_npc(key="hilda")
        plugin.remember("hilda", None, "The river flooded")
        npc_memory.uninstall("w")
        remount(disk, "ro")
        with pytest.raises(StoreError, match=f"cannot open store {db}: Read-only file system"):
            npc_memory.install(world="w", store=db)
        assert "w" not in npc_memory.installation._INSTALLED
        assert main(["inspect", "--db", str(db)]) == 0
        assert "hilda" in capsys.readouterr().out
        assert main(["stats", "--db", str(db)]) == 0
        assert main(["repair", "--db", str(db)]) == 1  # repairing needs to write: one clear line
        err = capsys.readouterr().err
        assert err.startswith("npc-memory repair: cannot open store") and "Traceback" not in err
        remount(disk, "rw")


def test_uninstall_on_a_failing_store_keeps_the_world_in_memory_and_it_can_be_exported(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        db = disk / "w.db"
        plugin = npc_memory.install(world="w", pack=pack(), store=db)
        plugin.add_npc(key="hilda")
        plugin.add_player(key="alice", consent=True)
        plugin.save()
        filler = fill(disk)
        for n in range(10):
            plugin.remember("hilda", "alice", f"Alice came by, visit {n}")
            tick("w", 1)
            plugin.storage.flush()
        with pytest.raises(StoreError) as caught:
            npc_memory.uninstall("w")
        message = str(caught.value)
        assert "stays installed" in message and "plugin.storage.export(PATH)" in message and "uninstall(save=False)" in message
        assert plugin.installed and len(plugin.memories("hilda", "alice")) == 10
        assert plugin.storage.export(tmp_path / "rescue.json") == 2  # written elsewhere, from memory
        assert import_store(tmp_path / "rescued.db", (tmp_path / "rescue.json").read_bytes()) == 2
        assert stored(tmp_path / "rescued.db") == {"hilda": 10}
        filler.unlink()  # the retry the error suggested
        npc_memory.uninstall("w")
        assert stored(db) == {"hilda": 10}


def test_one_oversized_document_never_blocks_the_others(tmp_path: Path) -> None:
    """A file-size limit (RLIMIT_FSIZE) that one NPC's document outgrows."""
    db = tmp_path / "w.db"
    plugin = npc_memory.install(world="w", pack=pack(interval=3600.0), store=db, seed=1)
    plugin.add_npc(key="big")
    plugin.add_npc(key="small")
    plugin.save()
    for n in range(150):
        plugin.remember("small", None, f"small event {n}")
    for n in range(100):
        plugin.remember("big", None, f"big event {n} " + "x" * 1900)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (128 * 1024, hard))
    try:
        with pytest.raises(StoreError, match="File too large"):
            plugin.save()
        assert plugin.health().status == "degraded"
        npc_memory.uninstall("w", save=False)  # as if the game stopped here
        assert leftovers(db) == []
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert stored(db) == {"big": 0, "small": 150}  # the small NPC whole, the big one as last saved
    store = TinyDBStore(db)
    meta = store.read_meta()
    store.close()
    assert meta is not None and meta.snapshots == 2  # and the metadata of the save that failed for one NPC


def remove_tree(path: Path) -> None:
    """``rm -rf`` from outside while the store's writer may still be adding files (a
    checkpoint after the save): retried until the directory is gone."""
    for _ in range(100):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} could not be removed")


def test_a_removed_store_directory_is_recreated_with_everything_in_memory(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    plugin = npc_memory.install(world="w", pack=pack(), store=db)
    plugin.add_npc(key="hilda")
    plugin.add_npc(key="brandt")
    plugin.remove("brandt")  # a stored NPC is rewritten too
    for n in range(300):
        plugin.remember("hilda", None, f"memory {n}")
    plugin.save()
    remove_tree(db)
    run("w", 3, plugin)  # the tick never raises
    plugin.remember("hilda", None, "after the loss")
    npc_memory.uninstall("w")
    assert stored(db) == {"hilda": 301, "brandt": 0}


def test_a_removed_lock_stops_every_write_and_the_new_owner_keeps_its_data(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    plugin = npc_memory.install(world="w", pack=pack(), store=db)
    lost: list[StoreOwnershipLost] = []
    plugin.on(StoreOwnershipLost, lost.append)
    plugin.add_npc(key="hilda")
    plugin.save()
    (db / "LOCK").unlink()
    second = subprocess.run(  # another process opens the store (the lock let it in) and writes its own world
        [sys.executable, "-c", SECOND_OWNER, str(db)], capture_output=True, text=True, timeout=60, check=False
    )
    assert second.returncode == 0, second.stderr
    plugin.remember("hilda", None, "written after the lock was lost")
    run("w", 3, plugin)
    assert [event.store for event in lost] == [str(db)]
    health = plugin.health()
    assert health.status == "failing" and "lost its lock" in health.reasons[0]
    with pytest.raises(StoreError, match="lost its lock"):
        plugin.save()
    npc_memory.uninstall("w", save=False)
    assert stored(db) == {"intruder": 1}  # never overwritten by the process that lost the lock


SECOND_OWNER = """
import sys
from npc_memory.components import EpisodicMemory, MemoryBank, PairMemories
from npc_memory.store import SCHEMA_VERSION, NpcDocument, StoreMeta, TinyDBStore, encode_document
store = TinyDBStore(sys.argv[1])
contents = store.load()
store.delete(list(contents.documents))
bank = MemoryBank(world=PairMemories(episodic=[EpisodicMemory(id="m1", content="mine now")]), next_id=2)
store.write([encode_document(NpcDocument(v=SCHEMA_VERSION, key="intruder", name="Intruder", bank=bank))], StoreMeta(world="other"))
store.close()
"""
