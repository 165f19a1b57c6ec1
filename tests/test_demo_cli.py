"""``npc-memory demo``: scenarios, --quiet, --json, --report, and stores it may touch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npc_memory.cli import main
from npc_memory.demo.simulation import HOURS_PER_DAY
from npc_memory.demo.village import run_village

SMALL_TOWN = ["demo", "town", "--npcs", "100", "--players", "4", "--days", "2"]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # default stores and reports go to the working directory


def test_the_town_writes_its_report_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(SMALL_TOWN) == 0
    out = capsys.readouterr().out
    assert out.startswith("npc-memory demo: town, 100 NPCs in 1 district, 4 players, 2 game days, seed 7")
    assert "\nDay 2\n" in out and "Summary after 2 game days:" in out
    assert "Report: npc-memory-town-report/index.html" in out
    assert (tmp_path / "npc-memory-town-report" / "index.html").is_file()
    assert not (tmp_path / "npc-memory-demo.db").exists()  # the town is kept in memory unless --db


def test_quiet_prints_only_the_summary_and_no_report_writes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*SMALL_TOWN, "--quiet", "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "\nDay 1\n" not in out and "Summary after 2 game days:" in out
    assert not (tmp_path / "npc-memory-town-report").exists()


def test_json_is_the_story_for_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--days", "2", "--memory", "--json", "--report", str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    story = json.loads(captured.out)  # nothing but JSON on standard output
    assert story["days"] == 2 and story["styles"] == {"alice": "hero", "bram": "thief", "cora": "trader"}
    assert {"deeds", "moments", "changes", "census", "summary", "days_told"} <= story.keys()
    assert "Report:" in captured.err and (tmp_path / "r" / "index.html").is_file()


def test_resume_on_a_missing_store_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--db", "nowhere.db", "--resume"]) == 1
    assert "nowhere.db does not exist" in capsys.readouterr().err
    assert not (tmp_path / "nowhere.db").exists()
    assert main(["demo", "--memory", "--resume"]) == 1
    assert "--resume" in capsys.readouterr().err


def test_resume_refuses_a_directory_that_is_not_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    assert main(["demo", "--db", "notes", "--resume"]) == 1
    assert "not an npc-memory store" in capsys.readouterr().err
    assert main(["demo", "--db", "notes"]) == 1
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


def test_resume_continues_the_saved_village(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--days", "2", "--db", "v.db", "--quiet"]) == 0
    assert "Saved to v.db (8 NPCs, 3 players)" in capsys.readouterr().out
    assert main(["demo", "--days", "1", "--db", "v.db", "--resume"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("npc-memory demo: village, 8 NPCs, 3 players, game days 3-3, seed 7")
    assert "\nDay 3\n" in out and "\nDay 1\n" not in out


def test_a_progress_bar_hears_of_every_game_hour() -> None:
    updates: list[int] = []

    class Bar:
        def update(self, n: int) -> None:
            updates.append(n)

        def close(self) -> None:
            updates.append(0)

    totals: list[int] = []

    def start(total: int) -> Bar:
        totals.append(total)
        return Bar()

    run_village(days=2, progress=start)
    assert totals == [2 * HOURS_PER_DAY]
    assert sum(updates) == 2 * HOURS_PER_DAY and updates[-1] == 0


def test_the_progress_bar_is_tqdm_on_standard_error() -> None:
    from tqdm import tqdm

    from npc_memory.demo.progress import progress_bar

    bars: list[tqdm[object]] = []
    start = progress_bar("village")

    def keep(total: int) -> tqdm[object]:
        bars.append(start(total))
        return bars[-1]

    run_village(days=1, progress=keep)
    [bar] = bars
    assert isinstance(bar, tqdm) and bar.total == HOURS_PER_DAY
