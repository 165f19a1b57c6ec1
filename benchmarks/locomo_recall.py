"""Retrieval quality on LoCoMo: does ``plugin.recall`` find the turns that answer a question?

    python benchmarks/locomo_recall.py --data ../shared/data/locomo/locomo_dev.json

Every turn of each conversation becomes a memory of one NPC–player pair (the turn's
``dia_id`` kept as the memory's source), sessions a game day apart; each QA question is
asked through ``plugin.recall`` (without strengthening, so questions do not influence
each other), and recall@k is the share of a question's evidence turns found in the top k,
averaged per category and overall. Beside it: plain BM25 (the bm25s library) over the
same turns, and the LoCoMo paper's published figures (DRAGON retriever, dialog turns).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import esper

import npc_memory
from npc_memory.content import load_pack, validate_pack

KS = (5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
PAPER = {5: 56.7, 10: 66.2, 25: 76.7}  # LoCoMo, Table 3, DRAGON over dialog turns, all categories


def turns(conversation: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(session number, turn) for every turn, in order."""
    found = []
    for key, value in conversation.items():
        if key.startswith("session_") and isinstance(value, list):
            found.extend((int(key.split("_")[1]), turn) for turn in value)
    return sorted(found, key=lambda item: item[0])


def text_of(turn: dict[str, Any]) -> str:
    caption = f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else ""
    return f"{turn['speaker']}: {turn['text']}{caption}"


def evidence_of(qa: dict[str, Any], known: set[str]) -> list[str]:
    """Evidence ids that resolve to a turn (ids such as "D8:6; D9:17" are split)."""
    ids = [part.strip() for item in qa.get("evidence", []) for part in str(item).split(";")]
    return [i for i in ids if i in known]


def evaluate(data: list[dict[str, Any]]) -> dict[str, dict[str, dict[int, float]]]:
    """Mean recall@k per system and category ("all" included), in percent."""
    import bm25s

    pack = load_pack("village").model_dump()
    pack["memory"].update(episodic_cap=100_000)
    sums: dict[str, dict[str, dict[int, float]]] = {s: defaultdict(lambda: defaultdict(float)) for s in ("plugin", "bm25")}
    counts: dict[str, int] = defaultdict(int)
    for number, sample in enumerate(data):
        world = f"locomo-{number}"
        plugin = npc_memory.install(world=world, pack=validate_pack(pack))
        plugin.add_npc(key="npc", name=sample["conversation"]["speaker_a"])
        plugin.add_player(key="player", name=sample["conversation"]["speaker_b"])
        corpus, ids = [], []
        for session, turn in turns(sample["conversation"]):
            plugin.clock.set(max(plugin.clock.now, session * 86_400.0))
            text = text_of(turn)
            plugin.remember("npc", "player", text[:2000], source_conversation=turn["dia_id"])
            corpus.append(text)
            ids.append(turn["dia_id"])
        plugin.clock.advance(86_400.0)
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        known = set(ids)
        for qa in sample["qa"]:
            evidence = evidence_of(qa, known)
            if not evidence:
                continue
            category = CATEGORIES.get(qa["category"], str(qa["category"]))
            top = max(KS)
            ours = [m.source_conversation for m in plugin.recall("npc", "player", qa["question"], k=top, strengthen=False)]
            found, _ = retriever.retrieve(
                bm25s.tokenize([qa["question"]], stopwords="en", show_progress=False), k=min(top, len(corpus)),
                show_progress=False,
            )
            theirs = [ids[i] for i in found[0]]
            for system, ranked in (("plugin", ours), ("bm25", theirs)):
                for k in KS:
                    hit = len(set(ranked[:k]) & set(evidence)) / len(evidence)
                    for group in (category, "all"):
                        sums[system][group][k] += hit
            counts[category] += 1
            counts["all"] += 1
        npc_memory.uninstall(world)
        esper.switch_world("default")
        esper.delete_world(world)
    return {
        system: {group: {k: 100.0 * total[k] / counts[group] for k in KS} for group, total in groups.items()}
        for system, groups in sums.items()
    } | {"questions": {group: {0: float(n)} for group, n in counts.items()}}


def report(results: dict[str, dict[str, dict[int, float]]]) -> str:
    lines = [f"{'category':12} {'questions':>9}  " + "  ".join(f"plugin@{k:<2} bm25@{k:<2}" for k in KS)]
    groups = [g for g in (*CATEGORIES.values(), "all") if g in results["plugin"]]
    for group in groups:
        cells = "  ".join(f"{results['plugin'][group][k]:8.1f} {results['bm25'][group][k]:7.1f}" for k in KS)
        lines.append(f"{group:12} {int(results['questions'][group][0]):9d}  {cells}")
    lines.append(f"{'paper DRAGON':12} {'':9}  " + "  ".join(f"{'':8} {PAPER[k]:7.1f}" for k in KS))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo-format JSON file")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"no LoCoMo data at {args.data}", file=sys.stderr)
        return 2
    print(report(evaluate(json.loads(args.data.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
