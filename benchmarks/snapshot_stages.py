"""What a snapshot round's documents cost the store writer, stage by stage, on its own.

Plays the ``stress`` mix of ``scale.py`` (same load, same caps options) on a world with
no store for ``--ticks`` ticks, back to back, so that NPCs reach their caps; captures
every NPC as the writer would at the start of a round; plays one snapshot interval
more (60 ticks); then times, over the NPCs that changed in it and with nothing else
running (no writer thread, no checkpoint process), the three stages the writer runs
for each of them with the GIL held:

- *capture*: :func:`~npc_memory.store.records.capture_atomically` of the parts marked
  changed, the others taken from the capture before;
- *diff*: :func:`~npc_memory.store.records.diff` against the capture before;
- *encode*: the journal record of the patch (msgpack);
- *frame*: the record framed for the journal (header and CRC), what the writer adds
  before the write system call.

Then what a writer *process* would need this interpreter to do instead of the diff and
the encoding: *ship*, the changed parts of each capture encoded (msgpack) to send to it
(with, of the relationships, only the players set since the capture before, where
known), and its size. Last, *the writer*: a real
:class:`~npc_memory.store.writer.StoreWriter` on a TinyDB store in a temporary
directory, seeded with the captures before, writes the same NPCs as one round (its
groups of 512, their appends and fsyncs), timed by the writer thread's CPU clock: the
stages plus what the writer adds around them (framing, generators, bookkeeping, pauses'
clock reads), alone.

While it plays, it prints every ``--report`` ticks what the host's facade calls cost a
tick (wall time, by kind): the game's own work with no store beside it. Each stage is
timed three times over all the changed NPCs; the best is kept. Then the
same by parts mask (the most common masks). Compare with what a scale run's writer pays
for the same stages (CHANGELOG.md, "Benchmark history", "Long runs, continued"), where the writer
shares the interpreter with the game.

    python benchmarks/snapshot_stages.py --npcs 10000 --players 1000 --ticks 3000
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import esper
import msgspec
import scale  # the load and caps of the sustained-load benchmark (run as a script, beside it)

import npc_memory
from npc_memory.store import journal, records
from npc_memory.store.tinydb_store import TinyDBStore, record_encoder
from npc_memory.store.writer import StoreWriter, WriteBatch

WORLD = "snapshot-stages"
REPEATS = 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--npcs", type=int, default=10000)
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=3000, help="ticks played before the round (warm-up)")
    parser.add_argument("--report", type=int, default=1000, help="print the facade calls' cost every N ticks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fact-cap", type=int, default=20)
    parser.add_argument("--memory-cap", type=int, default=3)
    parser.add_argument("--player-cap", type=int, default=20)
    args = parser.parse_args(argv)
    config = scale.Config(
        npcs=args.npcs, players=args.players, ticks=args.ticks, mix="stress", seed=args.seed,
        fact_cap=args.fact_cap, memory_cap=args.memory_cap, player_cap=args.player_cap,
    )
    pack = scale.with_caps(npc_memory.load_pack("village"), config)
    load = scale.Load(config, pack)
    plugin = npc_memory.install(world=WORLD, pack=pack, seed=args.seed, time_scale=scale.TIME_SCALE)
    try:
        scale.populate(plugin, load)
        state = plugin._state
        state.persistent = True  # mark changes as a store would have them marked
        esper.switch_world(WORLD)

        calls: dict[str, float] = collections.defaultdict(float)
        clock = time.perf_counter

        def play(ticks: int, report: int = 0) -> None:
            for tick in range(1, ticks + 1):
                for call in load.tick():
                    began = clock()
                    getattr(plugin, call.kind)(*call.args, **call.kwargs)
                    calls[call.kind] += clock() - began
                esper.process(scale.DT)
                if report and tick % report == 0:
                    each = ", ".join(f"{kind} {total / report * 1e3:.2f}" for kind, total in calls.items())
                    print(f"  ticks {tick - report + 1}-{tick}: facade calls {sum(calls.values()) / report * 1e3:.2f} "
                          f"ms a tick ({each}); RSS {scale.rss_mb():.0f} MB", flush=True)
                    calls.clear()

        started = clock()
        play(args.ticks, args.report)
        print(f"stress, {args.npcs} NPCs, {args.players} players: {args.ticks} ticks played in "
              f"{clock() - started:.0f} s")
        gc.collect()
        gc.freeze()  # (the timings below are of the stages, not of collections)
        live = state.registry.live
        now = plugin.clock.now
        bases = {npc.key: records.capture_atomically(live(npc.key), now) for npc in load.npcs}
        state.changed.clear()
        state.dirty.clear()
        state.relationship_players.clear()
        play(round(plugin.pack.budgets.snapshot_interval / scale.TIME_SCALE / scale.DT))
        changed = dict(state.changed)
        players = dict(state.relationship_players)
        now = plugin.clock.now
        masks = collections.Counter(changed.values())
        print(f"changed in one interval: {len(changed)} of {args.npcs} NPCs; parts masks (bank 1, "
              f"relationships 2, working 4, knowledge 8): {masks.most_common(6)}")

        def capture(keys: Sequence[str]) -> list[Any]:
            out = []
            for key in keys:
                taken = records.capture_atomically(live(key), now, changed[key], bases[key])
                since = players.get(key)
                if since is not None:
                    taken.relationship_players = tuple(since)
                out.append(taken)
            return out

        def diff(captures: Sequence[Any]) -> list[Any]:
            return [records.diff(bases[c.key], c, lsn=2, base_lsn=1) for c in captures]

        def encode(patches: Sequence[Any]) -> list[bytes]:
            return [record_encoder.encode(p) for p in patches if p is not None]

        shipper = msgspec.msgpack.Encoder()

        def ship(captures: Sequence[Any]) -> list[bytes]:
            out = []
            for c in captures:
                base = bases[c.key]
                relationships = None
                if c.relationships is not base.relationships:
                    since = c.relationship_players
                    known = since is not None and all(map(c.relationships.__contains__, since))
                    relationships = {p: c.relationships[p] for p in since} if known else c.relationships
                parts = (c.bank if c.bank is not base.bank else None, relationships,
                         c.working if c.working is not base.working else None,
                         c.knowledge if c.knowledge is not base.knowledge else None)
                out.append(shipper.encode((c.key, c.room, c.saved_at, parts, c.relationship_players)))
            return out

        keys = list(changed)
        captures = best("capture", lambda: capture(keys), len(keys))
        patches = best("diff", lambda: diff(captures), len(keys))
        encoded = best("encode", lambda: encode(patches), len(keys))
        best("frame", lambda: [journal.frame(4096, e) for e in encoded], len(keys))
        print(f"patch: {sum(map(len, encoded)) / max(1, len(encoded)):.0f} bytes on average")
        shipped = best("ship (for a writer process)", lambda: ship(captures), len(keys))
        print(f"shipped: {sum(map(len, shipped)) / max(1, len(shipped)):.0f} bytes on average")
        print(f"the writer, alone: {write_round(keys, changed, players, bases, live, now):.2f} µs per document "
              "of its CPU (the stages included)")
        for mask, count in masks.most_common(6):
            group = [k for k in keys if changed[k] == mask]
            taken = capture(group)
            timed = [(name, best_of(fn, len(group)))
                     for name, fn in (("capture", lambda g=group: capture(g)), ("diff", lambda t=taken: diff(t)))]
            print(f"  mask {mask:2d} ({count} NPCs): " + ", ".join(f"{n} {us:.1f} µs" for n, us in timed))
    finally:
        npc_memory.uninstall(WORLD)
    return 0


def write_round(
    keys: Sequence[str], changed: dict[str, int], players: dict[str, Any], bases: dict[str, Any],
    live: Callable[[str], Any], now: float,
) -> float:
    """The best of ``REPEATS`` rounds of ``keys`` written by a store writer seeded with
    ``bases``, in µs of the writer thread's CPU per document."""

    def capture(key: str, parts: int, since: Any, base: Any) -> Any:
        taken = records.capture_atomically(live(key), now, parts, base)
        if since is not None and base is not None:
            taken.relationship_players = tuple(since)
        return taken

    fastest = float("inf")
    for _ in range(REPEATS):
        with tempfile.TemporaryDirectory() as directory:
            store = TinyDBStore(directory)
            writer = StoreWriter(store, capture=capture)
            try:
                for key in keys:
                    writer.seed(key, 1, bases[key])
                writer.submit(WriteBatch())  # the thread is up and idle
                writer.drain()
                clock = time.pthread_getcpuclockid(writer._thread.ident or 0)
                began = time.clock_gettime(clock)
                writer.submit(WriteBatch(keys=list(keys), parts=dict(changed), players=dict(players),
                                         round=1, captures_round=True))
                writer.drain()
                fastest = min(fastest, time.clock_gettime(clock) - began)
                assert not writer.take_failures()
            finally:
                writer.close()
                store.close()
    return fastest / max(1, len(keys)) * 1e6


def best_of(fn: Callable[[], Any], count: int) -> float:
    """The best of ``REPEATS`` runs of ``fn``, in µs per item of ``count``."""
    fastest = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        fastest = min(fastest, time.perf_counter() - started)
    return fastest / max(1, count) * 1e6


def best(name: str, fn: Callable[[], Any], count: int) -> Any:
    """Print :func:`best_of` for ``fn`` under ``name``; return its result."""
    print(f"{name}: {best_of(fn, count):.2f} µs per document")
    return fn()


if __name__ == "__main__":
    sys.exit(main())
