"""The README's promises: its first commands, and its quickstart, run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
TEST_COMMAND = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && pytest"


def test_first_lines_give_the_demo_and_test_commands() -> None:
    head = README.splitlines()[:10]
    assert any("npc-memory demo" in line and "pip install" in line for line in head)
    assert any(line.strip() == TEST_COMMAND for line in head)


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert TEST_COMMAND in ci


def test_quickstart_runs_exactly_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # it saves to ./village.db
    match = re.search(r"## Quickstart\n\n```python\n(.*?)```", README, re.S)
    assert match, "README has no Quickstart python block"
    code = match.group(1)
    assert len(code.strip().splitlines()) <= 30
    exec(compile(code, "README.md quickstart", "exec"), {"__name__": "quickstart"})
    assert (tmp_path / "village.db" / "meta.json").exists()
