"""Smoke run of benchmarks/actor_source.py on the dialogue set (skipped without it): the
figures its README table reports hold on this tree."""

from __future__ import annotations

import json

import pytest

from benchmarks.actor_source import DATA, measure, report


@pytest.mark.skipif(not DATA.exists(), reason=f"the dialogue set is not at {DATA} (../shared/data)")
def test_npcs_own_stories_never_count_against_the_player_and_witnesses_count_what_they_saw(cleanup: None) -> None:
    figures = measure(json.loads(DATA.read_text("utf-8")))
    assert figures["others"] > 0 and figures["deeds"] > 0, report(figures)
    assert figures["counted_against"] == 0, report(figures)
    assert figures["witnessed"] == 1.0, report(figures)
    assert figures["claim_counted"] == 0, report(figures)
    assert figures["claimed"] >= 0.9, report(figures)  # boasts stored as claims (issue 45's target)
    assert figures["stories"] <= 0.1, report(figures)  # claims found where no talk is labelled one
