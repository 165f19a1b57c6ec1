"""Content lives in the pack: the rule extractor's tags and cues, consolidation wording,
context wording levels and gossip constants are pack fields whose defaults are the
behaviour the plugin had when they were constants."""

from __future__ import annotations

import json

import pytest

from npc_memory.content import load_pack, parse_pack
from npc_memory.extraction.rules import RuleBasedExtractor

from .extraction_cases import GOLDEN, cases, encode

MINIMAL = '[pack]\nname = "tiny"\n'


@pytest.mark.parametrize(
    "extractor",
    [
        pytest.param(lambda: RuleBasedExtractor(), id="no-rules"),
        pytest.param(lambda: RuleBasedExtractor(load_pack("village").extraction), id="village-pack"),
        pytest.param(lambda: RuleBasedExtractor(parse_pack(MINIMAL).extraction), id="minimal-pack"),
    ],
)
def test_default_rules_reproduce_the_recorded_output_byte_for_byte(extractor: object) -> None:
    # Recorded from the extractor before its cues moved into the pack (tests/extraction_cases.py).
    golden: dict[str, str] = json.loads(GOLDEN.read_text("utf-8"))
    rules = extractor()  # type: ignore[operator]
    output = {case: encode(rules.extract(job)) for case, job in cases()}
    assert output.keys() == golden.keys()
    differing = [case for case in golden if output[case] != golden[case]]
    assert not differing, (differing[:5], [output[c] for c in differing[:2]])
    assert sum(value != "[]" for value in golden.values()) > 150  # the cases do produce memories
