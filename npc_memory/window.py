"""A sliding window of the latest samples (durations in seconds), kept in a fixed ring
buffer: adding a sample allocates nothing, percentiles are computed when asked."""

from __future__ import annotations

from array import array


class SampleWindow:
    """The last ``size`` samples; ``limit`` (if any) counts samples above it as
    overruns, in the window (:attr:`overruns_in_window`) and in total."""

    __slots__ = ("count", "limit", "overruns", "overruns_in_window", "position", "samples", "size", "total")

    def __init__(self, size: int = 600, limit: float | None = None) -> None:
        if size < 1:
            raise ValueError(f"a window holds at least one sample, got size {size}")
        self.size = size
        self.limit = limit
        self.samples = array("d", bytes(8 * size))
        self.position = 0
        self.count = 0
        """Samples in the window (at most ``size``)."""
        self.total = 0
        """Samples ever added."""
        self.overruns = 0
        """Samples above ``limit`` ever added."""
        self.overruns_in_window = 0

    def add(self, value: float) -> None:
        """Add one sample (replacing the oldest once the window is full)."""
        limit = self.limit
        position = self.position
        if self.count == self.size:
            if limit is not None and self.samples[position] > limit:
                self.overruns_in_window -= 1
        else:
            self.count += 1
        self.samples[position] = value
        self.position = position + 1 if position + 1 < self.size else 0
        self.total += 1
        if limit is not None and value > limit:
            self.overruns += 1
            self.overruns_in_window += 1

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0–100, nearest rank) of the window; 0.0 when empty."""
        if not self.count:
            return 0.0
        ordered = sorted(self.samples[: self.count])
        rank = max(1, min(self.count, int(-(-q * self.count // 100))))
        return ordered[rank - 1]

    def latest(self) -> float:
        """The sample added last (0.0 when empty)."""
        return self.samples[self.position - 1] if self.count else 0.0
