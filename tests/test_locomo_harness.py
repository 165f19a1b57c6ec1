"""The LoCoMo retrieval harness runs, and recall beats plain BM25 on the development split.

The data set is shared beside the project (../shared/data); a checkout without it skips.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.locomo_recall import evaluate, evidence_of, report

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"


def test_evidence_ids_are_split_and_resolved() -> None:
    assert evidence_of({"evidence": ["D8:6; D9:17", "D1:3", "D99:1"]}, {"D8:6", "D9:17", "D1:3"}) == ["D8:6", "D9:17", "D1:3"]


@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo development data not found at {DATA}")
def test_recall_beats_plain_bm25_on_locomo() -> None:
    results = evaluate(json.loads(DATA.read_text()))
    assert results["questions"]["all"][0] > 900
    for k in (5, 10, 25):
        assert results["plugin"]["all"][k] > results["bm25"]["all"][k], report(results)
    assert results["plugin"]["all"][25] > 60.0, report(results)
