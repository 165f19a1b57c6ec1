"""Simulated models through the real SDK and the local fake Messages API, on the 160
dialogues of ../shared/data/dialogue/dialogues_dev.json (skipped without them): what the
plugin stores from a careful model, an inventor, a misattributor and a model that obeys
an injected line, and, for comparison, the offline rule reader. The figures are in
benchmarks/README.md; print them with ``python -m tests.test_sim_models`` (see :func:`main`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from . import sim_models as sm

pytestmark = pytest.mark.skipif(not sm.DATA.exists(), reason=f"the dialogue set is not at {sm.DATA}")


@pytest.fixture(scope="module")
def scores() -> dict[str, sm.Scores]:
    with pytest.MonkeyPatch.context() as monkeypatch, tempfile.TemporaryDirectory() as config:
        sm.clean_anthropic_environment(monkeypatch, Path(config))
        conversations = sm.load_conversations()
        return {name: sm.score(sm.run_model(name, conversations)) for name in sm.MODELS}


def rate(pair: tuple[int, int]) -> float:
    return pair[0] / pair[1]


def test_a_careful_models_memories_are_kept_as_it_read_them(scores: dict[str, sm.Scores]) -> None:
    careful = scores["careful"]
    assert rate(careful.events) >= 0.95 and rate(careful.facts) >= 0.9 and rate(careful.trust) >= 0.9
    assert careful.false_memory_talks == []
    assert careful.corrected[1] >= 20 and rate(careful.corrected) >= 0.9  # corrections told as current


def test_inventions_misattributions_and_obeyed_injections_rarely_get_through(
    scores: dict[str, sm.Scores],
) -> None:
    talks = scores["inventor"].talks
    assert len(scores["inventor"].false_memory_talks) <= 0.02 * talks
    assert len(scores["misattributor"].false_memory_talks) <= 0.05 * talks
    assert scores["obeyer"].false_memory_talks == []


def main(argv: list[str]) -> None:
    """``python -m tests.test_sim_models [rules|careful|inventor|misattributor|obeyer ...]
    [--misses]``: each model's figures (default: the four simulated models), per actor,
    category and trust label; ``rules`` is the offline rule reader (no model at all);
    ``--misses`` lists every miss with the transcript, the answer and what was stored."""
    misses = "--misses" in argv
    models = [a for a in argv if a != "--misses"] or list(sm.MODELS)
    with tempfile.TemporaryDirectory() as config_dir:
        patch = pytest.MonkeyPatch()
        sm.clean_anthropic_environment(patch, Path(config_dir))
        data = sm.load_conversations()
        for model in models:
            run = sm.run_model(model, data)
            sm.report(run, sm.score(run), show_misses=misses)
        patch.undo()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
