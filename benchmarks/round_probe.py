"""``scale.py`` with a log of every snapshot round and of the store writer's waits.

Runs ``benchmarks/scale.py`` with the arguments given (after ``--rounds FILE``) and,
without changing what it does, records for every snapshot round the game time it
started, when the writer was told it was late, when its documents were all captured
and when its metadata was on disk; and for the writer, per 20 s of its wall clock, its
CPU time, its hand-backs of the interpreter (how many, how long each took to get the
interpreter back) and its waits for ticks to end. At the end it prints, per
``--window`` ticks, the rounds' mean and longest length, the share that went late and
when, and writes the rounds to ``FILE`` as JSON. The figures in CHANGELOG.md ("Benchmark history"),
"Why rounds overrun at stress 10k", come from

    python benchmarks/round_probe.py --rounds rounds.json --npcs 10000 --players 1000 \\
        --ticks 20000 --mix stress --fact-cap 20 --memory-cap 3 --player-cap 20 --window 2000 --store D

It wraps private parts of the plugin (the persistence service and the store writer):
a diagnostic, not an interface.
"""

from __future__ import annotations

import json
import runpy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import npc_memory.services.persistence as persistence
from npc_memory.store import writer as store_writer

REPORT_EVERY = 20.0
"""Seconds of the writer's wall clock between two reports of its waits."""

rounds: dict[int, dict[str, Any]] = {}
service: list[Any] = []
waits = {"wall": 0.0, "cpu": 0.0, "hand_backs": 0, "handing_back": 0.0, "tick_waits": 0, "waiting": 0.0}


def game_time() -> float:
    return float(service[0].state.clock.now) if service else 0.0


def current() -> dict[str, Any] | None:
    return rounds.get(service[0]._round_number) if service else None


def install_probes() -> None:
    start, submit_keys, submit_end = (persistence.PersistenceService._start_round,
                                      persistence.PersistenceService._submit_keys,
                                      persistence.PersistenceService._submit_end)

    def start_round(self: Any, now: float) -> None:
        service[:] = [self]
        start(self, now)
        rounds[self._round_number] = {"start": now, "late": None, "captured": None, "durable": None, "size": None}

    def keys(self: Any, *args: Any) -> None:
        submit_keys(self, *args)
        rounds[self._round_number]["size"] = self._round_size

    def end(self: Any, captures: Any, now: float, *args: Any, **kwargs: Any) -> None:
        entry = rounds.get(self._round_number)
        if entry is not None and entry["captured"] is None:
            entry["captured"] = now
        submit_end(self, captures, now, *args, **kwargs)

    persistence.PersistenceService._start_round = start_round
    persistence.PersistenceService._submit_keys = keys
    persistence.PersistenceService._submit_end = end

    def set_late(self: Any, value: bool) -> None:
        entry = current()
        if value and not self.__dict__.get("_probe_late") and entry is not None and entry["late"] is None:
            entry["late"] = game_time()
        self.__dict__["_probe_late"] = value

    def set_durable(self: Any, value: int) -> None:
        # Round ``value`` on disk means every earlier one is too: the writer may pass
        # over a round's number (its metadata written in one batch with the next's).
        if value != self.__dict__.get("_probe_durable"):
            for number, entry in rounds.items():
                if number <= value and entry["durable"] is None:
                    entry["durable"] = game_time()
        self.__dict__["_probe_durable"] = value

    store_writer.StoreWriter.late = property(lambda self: self.__dict__.get("_probe_late", False), set_late)
    store_writer.StoreWriter.durable_round = property(lambda self: self.__dict__.get("_probe_durable", 0), set_durable)

    hand_back, write, init = (store_writer.StoreWriter._hand_back, store_writer.StoreWriter._write,
                              store_writer.StoreWriter.__init__)

    def timed_hand_back(self: Any) -> None:
        began = time.perf_counter()
        hand_back(self)
        waits["hand_backs"] += 1
        waits["handing_back"] += time.perf_counter() - began

    def timed_write(self: Any, batches: Any) -> None:
        began, cpu = time.perf_counter(), time.thread_time()
        try:
            write(self, batches)
        finally:
            waits["wall"] += time.perf_counter() - began
            waits["cpu"] += time.thread_time() - cpu
            if waits["wall"] >= REPORT_EVERY:
                print(f"writer: wall {waits['wall']:.1f} s, CPU {waits['cpu'] / waits['wall']:.0%} of it; "
                      f"{waits['hand_backs']} hand-backs taking {waits['handing_back']:.1f} s "
                      f"({waits['handing_back'] / max(1, waits['hand_backs']) * 1e3:.2f} ms each); "
                      f"{waits['tick_waits']} waits for a tick, {waits['waiting']:.1f} s", file=sys.stderr, flush=True)
                waits.update(wall=0.0, cpu=0.0, hand_backs=0, handing_back=0.0, tick_waits=0, waiting=0.0)

    def probed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        wait_idle = self.wait_idle
        if wait_idle is not None:
            def timed_wait() -> bool:
                began = time.perf_counter()
                waited = bool(wait_idle())
                waits["tick_waits"] += waited
                waits["waiting"] += time.perf_counter() - began
                return waited
            self.wait_idle = timed_wait

    store_writer.StoreWriter._hand_back = timed_hand_back
    store_writer.StoreWriter._write = timed_write
    store_writer.StoreWriter.__init__ = probed_init


def summary(window_ticks: int) -> None:
    """Rounds per window of game time (one tick is one game second in scale.py)."""
    by_window: dict[int, list[dict[str, Any]]] = {}
    for entry in rounds.values():  # (rounds of save() hand no keys: left out)
        if entry["durable"] is not None and entry["size"] is not None:
            by_window.setdefault(int(entry["start"] // window_ticks), []).append(entry)
    print("from game s | rounds | documents (mean) | took s (mean / longest) | late (share, mean s in)")
    for window, entries in sorted(by_window.items()):
        took = [e["durable"] - e["start"] for e in entries]
        late = [e["late"] - e["start"] for e in entries if e["late"] is not None]
        sizes = [e["size"] for e in entries]
        print(f"{window * window_ticks:11d} | {len(entries):6d} | {statistics.mean(sizes):16.0f} | "
              f"{statistics.mean(took):5.1f} / {max(took):5.1f}           | "
              f"{len(late) / len(entries):.2f}, {statistics.mean(late) if late else 0:.1f}")


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--rounds":
        print(__doc__)
        return 2
    out, scale_args = Path(args[1]), args[2:]
    window = int(scale_args[scale_args.index("--window") + 1]) if "--window" in scale_args else 100
    install_probes()
    sys.argv = ["scale.py", *scale_args]
    code = 0
    try:
        runpy.run_path(str(Path(__file__).with_name("scale.py")), run_name="__main__")
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    summary(window)
    out.write_text(json.dumps(rounds))
    return code


if __name__ == "__main__":
    sys.exit(main())
