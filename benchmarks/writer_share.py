"""What share of the interpreter the store writer gets beside a game thread that never sleeps.

Builds a world of ``--npcs`` NPCs (30 rooms, 100 players, 90 observed events, so each
NPC holds a few facts and relationships): captures every NPC as a store writer would
have written it after the first 60 events and plays the last 30; then, ``--repeats`` times,
has a real :class:`~npc_memory.store.writer.StoreWriter` on a TinyDB store in a
temporary directory write every NPC as one snapshot round while another thread runs
pure Python without pause (a game whose frames have no idle time). Prints, for the
writer with its round on time (``polite``: it hands the GIL back every millisecond, and
more often once it finds the game thread busy) and late (``late``: it shares the GIL
only as the interpreter's switch interval makes it), the round's wall time and the
writer thread's CPU time as a share of it.

    python benchmarks/writer_share.py --npcs 3000 --repeats 3

It reaches into private parts of the plugin (the world state, the writer's thread): a
diagnostic, not an interface.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

import npc_memory
from npc_memory.store import records
from npc_memory.store.documents import Part
from npc_memory.store.tinydb_store import TinyDBStore
from npc_memory.store.writer import StoreWriter, WriteBatch

WORLD = "writer-share"
ROOMS = 30
PLAYERS = 100
EVENTS = 90


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--npcs", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    plugin = npc_memory.install(
        world=WORLD, pack=npc_memory.load_pack("village"), seed=1, time_scale=60.0, deterministic=True
    )
    try:
        for i in range(args.npcs):
            plugin.add_npc(key=f"n{i}", room=f"r{i % ROOMS}")
        for j in range(PLAYERS):
            plugin.add_player(key=f"p{j}", room="elsewhere")

        def events(first: int, last: int) -> None:
            for k in range(first, last):
                plugin.observe(room=f"r{k % ROOMS}", subject=f"p{k % PLAYERS}",
                               content=f"P{k} stole a loaf ({k})", tags=["theft"])

        events(0, 2 * EVENTS // 3)
        live = plugin._state.registry.live
        now = plugin.clock.now
        keys = [f"n{i}" for i in range(args.npcs)]
        bases = {key: records.capture_atomically(live(key), now) for key in keys}
        events(2 * EVENTS // 3, EVENTS)

        def capture(key: str, parts: int, since: Any, base: Any) -> Any:
            return records.capture_atomically(live(key), now, parts, base)

        stop = threading.Event()

        def game() -> None:
            total = 0
            while not stop.is_set():
                for i in range(200):
                    total += i * i

        busy = threading.Thread(target=game, daemon=True)
        busy.start()
        try:
            for late in (False, True):
                runs = [_round(keys, bases, capture, late) for _ in range(args.repeats)]
                print(f"{'late' if late else 'polite':6s} " + "; ".join(
                    f"{wall * 1e3:.0f} ms, CPU {share:.2f} of it ({len(keys) / wall:.0f} documents a second)"
                    for wall, share in runs
                ), flush=True)
        finally:
            stop.set()
            busy.join()
    finally:
        npc_memory.uninstall(WORLD)
    return 0


def _round(keys: list[str], bases: dict[str, Any], capture: Any, late: bool) -> tuple[float, float]:
    """One round of ``keys`` by a writer seeded with ``bases``: its wall time (s) and
    the writer thread's CPU time as a share of it."""
    with tempfile.TemporaryDirectory() as directory:
        writer = StoreWriter(TinyDBStore(directory), capture=capture)
        try:
            for key in keys:
                writer.seed(key, 1, bases[key])
            writer.submit(WriteBatch())  # the thread is up and idle
            writer.drain()
            writer.late = late
            clock = time.pthread_getcpuclockid(writer._thread.ident or 0)
            cpu, began = time.clock_gettime(clock), time.perf_counter()
            writer.submit(WriteBatch(keys=list(keys), parts=dict.fromkeys(keys, Part.ALL), players={}, round=1))
            writer.drain()
            wall = time.perf_counter() - began
            return wall, (time.clock_gettime(clock) - cpu) / wall
        finally:
            writer.close()


if __name__ == "__main__":
    raise SystemExit(main())
