"""The end-to-end LoCoMo harness (benchmarks/locomo_e2e.py): its answer check, a run on a
small conversation of its own, and on the development split (skipped without the shared
data) the answer is in the prompt at least 0.8 times as often as with bm25s over raw turns,
with fewer memories than a third of the turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.locomo_e2e import answered, evaluate, report

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"


def test_every_part_of_the_answer_must_appear() -> None:
    assert answered("Adoption agencies", "she looked into ADOPTION agencies last week")
    assert answered("painting, hiking", "Painting on Sundays; hiking in May")
    assert not answered("painting, hiking", "painting on Sundays")
    assert not answered("", "anything")


def test_a_small_conversation_end_to_end() -> None:
    sample = {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Mira", "speaker_b": "Tom",
            "session_1_date_time": "1 May 2023",
            "session_1": [
                {"speaker": "Tom", "dia_id": "D1:1", "text": "Hey Mira! Guess what, I adopted a greyhound named Pixel."},
                {"speaker": "Mira", "dia_id": "D1:2", "text": "No way! How is Pixel settling in?"},
                {"speaker": "Tom", "dia_id": "D1:3", "text": "Great. We walk along the canal every morning before work."},
            ],
            "session_2_date_time": "3 May 2023",
            "session_2": [
                {"speaker": "Mira", "dia_id": "D2:1", "text": "I signed up for a pottery class at the community center."},
                {"speaker": "Tom", "dia_id": "D2:2", "text": "Nice, bye!"},
            ],
        },
        "qa": [
            {"question": "What is the name of Tom's dog?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "What class did Mira sign up for?", "answer": "pottery class", "evidence": ["D2:1"],
             "category": 4},
            {"question": "What would Tom never do?", "adversarial_answer": "x", "evidence": [], "category": 5},
        ],
    }
    results = evaluate([sample])
    assert results["questions"]["all"] == 2  # category 5 is not asked
    assert results["rates"]["plugin"]["all"] == 100.0
    assert 0 < results["memories"] <= results["turns"] == 5
    assert "plugin / bm25" in report(results)


@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo development data not found at {DATA}")
def test_on_the_development_split_the_answer_is_in_the_prompt_as_often_as_bm25() -> None:
    results = evaluate(json.loads(DATA.read_text()))
    rates = results["rates"]
    # 26.6 % against 26.5 % when measured; the margin is a few questions of the 762.
    assert rates["plugin"]["all"] >= 0.97 * rates["bm25"]["all"], report(results)
    assert results["memories"] < results["turns"] / 2, report(results)  # at most half the lines kept
    assert results["tokens_min"] >= 900, report(results)
