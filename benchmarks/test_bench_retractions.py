"""Smoke run of benchmarks/retractions.py on the dialogue set (skipped without it): the
figures its README table reports hold on this tree."""

from __future__ import annotations

import json

import pytest

from benchmarks.retractions import DATA, measure, report


@pytest.mark.skipif(not DATA.exists(), reason=f"the dialogue set is not at {DATA} (../shared/data)")
def test_what_players_take_back_is_no_longer_told_as_true_and_little_else_is_taken_back(cleanup: None) -> None:
    figures = measure(json.loads(DATA.read_text("utf-8")))
    assert figures["lines"] == 9, report(figures)
    assert figures["told"] <= 0.1, report(figures)
    assert figures["false"] <= 0.02, report(figures)
