"""A progress bar on standard error for simulations that take more than a moment."""

from __future__ import annotations

from typing import Any

SHOW_AFTER_SECONDS = 2.0


def progress_bar(label: str) -> Any:
    """A factory for :func:`npc_memory.demo.simulation.run`'s ``progress``: a tqdm bar
    counting game hours, shown on a terminal once a run has taken two seconds."""
    from tqdm import tqdm

    def start(total: int) -> Any:
        return tqdm(
            total=total,
            desc=f"{label}: game hours",
            unit="h",
            delay=SHOW_AFTER_SECONDS,
            disable=None,
            leave=False,
            dynamic_ncols=True,
        )

    return start
