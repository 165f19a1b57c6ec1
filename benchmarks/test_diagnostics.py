"""Smoke runs of the diagnostic scripts (``snapshot_stages.py``, ``round_probe.py``,
``writer_share.py``) at a small size, each in a process of its own as it is run by hand
(``round_probe.py`` rewires the store writer's class for the rest of its process). They
reach into private parts of the plugin, so these runs are what tells when a change left
them behind. Figures are printed, never asserted beyond being figures."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
FIGURE = r"(\d+(?:\.\d+)?)"


def script(name: str, *args: str, cwd: Path = HERE) -> str:
    """Run ``benchmarks/name`` with ``args``; its standard output (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, str(HERE / name), *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_writer_share_reports_both_modes() -> None:
    out = script("writer_share.py", "--npcs", "90", "--repeats", "1")
    for mode in ("polite", "late"):
        [line] = [line for line in out.splitlines() if line.startswith(mode)]
        figures = re.search(rf"{FIGURE} ms, CPU {FIGURE} of it \({FIGURE} documents", line)
        assert figures is not None, line
        wall, share, rate = map(float, figures.groups())
        assert wall > 0 and 0 < share <= 1.0 and rate > 0, line


def test_snapshot_stages_times_every_stage() -> None:
    out = script("snapshot_stages.py", "--npcs", "200", "--players", "20", "--ticks", "120", "--report", "60")
    assert re.search(r"changed in one interval: \d+ of 200 NPCs", out), out
    for stage in ("capture", "diff", "encode", "frame", r"ship \(for a writer process\)"):
        assert re.search(rf"^{stage}: {FIGURE} µs per document", out, re.MULTILINE), (stage, out)
    assert re.search(rf"the writer, alone: {FIGURE} µs per document", out), out


def test_round_probe_logs_the_rounds(tmp_path: Path) -> None:
    rounds = tmp_path / "rounds.json"
    out = script(
        "round_probe.py", "--rounds", str(rounds), "--npcs", "200", "--players", "20", "--ticks", "200",
        "--mix", "stress", "--window", "100", "--store", str(tmp_path / "store"), "--pace", "0",
    )
    assert "reload identical: yes" in out, out
    assert "from game s | rounds" in out
    logged = json.loads(rounds.read_text())
    durable = [r for r in logged.values() if r["durable"] is not None and r["size"] is not None]
    assert durable and all(r["durable"] >= r["start"] for r in durable), logged
