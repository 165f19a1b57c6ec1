"""The npc-memory command line, run as a real subprocess and in-process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npc_memory.cli import main


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the demo writes its store to the working directory


def test_pack_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "validate", "village"]) == 0
    out = capsys.readouterr().out
    assert "village: ok" in out and "8 factions, 10 archetypes" in out


def test_pack_validate_reports_every_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[pack]\nname = "bad"\n[archetypes.x]\nfaction = "ghosts"\n')
    assert main(["pack", "validate", str(bad), "village", str(tmp_path / "nope.toml")]) == 1
    captured = capsys.readouterr()
    assert "village: ok" in captured.out
    assert f"invalid content pack {bad}" in captured.err and "unknown faction 'ghosts'" in captured.err
    assert "nope.toml" in captured.err and "no such pack file" in captured.err


def test_pack_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "list"]) == 0
    assert capsys.readouterr().out.split() == ["village"]


def test_demo_with_a_bad_pack_fails_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("nonsense")
    assert main(["demo", "--pack", str(bad)]) == 1
    assert "invalid TOML" in capsys.readouterr().err


def test_demo_names_what_a_pack_lacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sparse = tmp_path / "sparse.toml"
    sparse.write_text('[pack]\nname = "sparse"\n')
    assert main(["demo", "--pack", str(sparse)]) == 1
    assert "unknown archetype 'blacksmith'" in capsys.readouterr().err


def test_console_script_runs_the_demo_on_a_tinydb_store(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "npc_memory.cli", "demo", "--days", "2", "--seed", "3"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("npc-memory demo: village, 8 NPCs, 3 players, 2 game days, seed 3")
    assert "How each NPC regards each player" in result.stdout
    assert "Saved to npc-memory-demo.db (8 NPCs, 3 players)" in result.stdout
    assert len(list((tmp_path / "npc-memory-demo.db" / "docs").glob("*.json"))) == 11


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", "--days", "0"])
    assert info.value.code == 2
    assert main([]) == 2
