"""Kill a child process at a moment of its run: the crash tests' one way to do it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Collection, Sequence


def run_and_kill(args: Sequence[str], ready: str, delay: float, *, before: Collection[str] = ()) -> list[str]:
    """Run ``python args...``, wait for it to print the line ``ready`` (lines in ``before``
    may come first), let it run ``delay`` more seconds, SIGKILL it and return the lines it
    printed after ``ready`` (stripped, empty ones left out). A child that dies or prints
    anything else first fails the test, with its stderr."""
    child = subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stderr is not None
    try:
        line = child.stdout.readline()
        while line and line.strip() in before:  # "": the child died
            line = child.stdout.readline()
        if line.strip() != ready:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            raise AssertionError(f"{args}: expected {ready!r}, got {line!r}; stderr: {child.stderr.read()}")
        time.sleep(delay)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        output = child.stdout.read()
        child.stdout.close()
        child.stderr.close()
    return [text.strip() for text in output.splitlines() if text.strip()]
