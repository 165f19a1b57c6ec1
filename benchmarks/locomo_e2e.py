"""End to end on LoCoMo: do the memories a conversation leaves put the answer in the prompt?

    python benchmarks/locomo_e2e.py --data ../shared/data/locomo/locomo_dev.json

For each conversation, one speaker is the NPC and the other the player. Every session goes
in through ``plugin.say`` and ``plugin.end_conversation`` (sessions a game day apart, the
bundled pack, its default caps, the offline rule extractor), and the world ticks until the
extraction is applied. Each question of categories 1–4 then asks ``plugin.context(npc,
player, question, max_tokens=1000)``; a question counts as answered when every
comma-separated part of its gold answer appears, ignoring case, in the context text.

Beside it, at the same budget (token estimate of the plugin): the most recent turns
("recency"), and the turns plain BM25 (the bm25s library) ranks best for the question
("bm25"), each filling 1,000 tokens of raw ``speaker: text`` lines. Also reported: the
memories kept against the turns said, and how much of the budget the context used.
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
from npc_memory.context import estimate_tokens

BUDGET = 1000
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DAY = 86_400.0


def sessions(conversation: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The sessions of a conversation, in order, each a list of turns."""
    found = [
        (int(key.split("_")[1]), value)
        for key, value in conversation.items()
        if key.startswith("session_") and isinstance(value, list)
    ]
    return [turns for _, turns in sorted(found, key=lambda item: item[0])]


def line_of(turn: dict[str, Any]) -> str:
    """A turn as said: its text, and the caption of a shared picture if any."""
    caption = f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else ""
    return f"{turn['text']}{caption}"


def answered(answer: Any, text: str) -> bool:
    """Whether every comma-separated part of ``answer`` appears in ``text`` (ignoring case)."""
    parts = [part.strip().lower() for part in str(answer).split(",") if part.strip()]
    lowered = text.lower()
    return bool(parts) and all(part in lowered for part in parts)


def fill(lines: list[str], budget: int = BUDGET) -> str:
    """As many of ``lines`` (in order) as fit in ``budget`` estimated tokens."""
    text = ""
    for line in lines:
        candidate = f"{text}\n{line}" if text else line
        if estimate_tokens(candidate) > budget:
            break
        text = candidate
    return text


def evaluate(data: list[dict[str, Any]]) -> dict[str, Any]:
    """Answer rates per system and category, memories kept, turns said, budget use."""
    import bm25s

    hits: dict[str, dict[str, int]] = {s: defaultdict(int) for s in ("plugin", "recency", "bm25")}
    counts: dict[str, int] = defaultdict(int)
    memories = turns_said = 0
    used: list[int] = []
    for number, sample in enumerate(data):
        conversation = sample["conversation"]
        npc_name, player_name = conversation["speaker_a"], conversation["speaker_b"]
        world = f"locomo-e2e-{number}"
        plugin = npc_memory.install(world=world, pack="village")
        try:
            plugin.add_npc(key="npc", name=npc_name)
            plugin.add_player(key="player", name=player_name)
            said: list[str] = []
            for day, session in enumerate(sessions(conversation), start=1):
                plugin.clock.set(max(plugin.clock.now, day * DAY))
                for turn in session:
                    text = line_of(turn)[:2000]
                    plugin.say("npc", "player", turn["speaker"], text)
                    said.append(f"{turn['speaker']}: {text}")
                plugin.end_conversation("npc", "player")
                esper.switch_world(world)
                while plugin.extraction.pending():
                    esper.process(0.0)
            turns_said += len(said)
            memories += len(plugin.memories("npc", "player")) + len(plugin.memories("npc", None))
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize(said, stopwords="en", show_progress=False), show_progress=False)
            recent = fill(list(reversed(said)))
            for qa in sample["qa"]:
                category = CATEGORIES.get(qa["category"])
                if category is None or "answer" not in qa:
                    continue
                question = qa["question"]
                context = plugin.context("npc", "player", question, max_tokens=BUDGET)
                used.append(context.tokens)
                ranked, _ = retriever.retrieve(
                    bm25s.tokenize([question], stopwords="en", show_progress=False),
                    k=len(said), show_progress=False,
                )
                bm25 = fill([said[i] for i in ranked[0]])
                for system, text in (("plugin", context.text), ("recency", recent), ("bm25", bm25)):
                    if answered(qa["answer"], text):
                        hits[system][category] += 1
                        hits[system]["all"] += 1
                counts[category] += 1
                counts["all"] += 1
        finally:
            npc_memory.uninstall(world)
            esper.switch_world("default")
            esper.delete_world(world)
    return {
        "rates": {
            system: {group: 100.0 * found[group] / counts[group] for group in counts} for system, found in hits.items()
        },
        "questions": dict(counts),
        "memories": memories,
        "turns": turns_said,
        "tokens_mean": sum(used) / max(1, len(used)),
        "tokens_min": min(used, default=0),
    }


def report(results: dict[str, Any]) -> str:
    rates, questions = results["rates"], results["questions"]
    lines = [f"{'category':12} {'questions':>9} {'plugin':>8} {'recency':>8} {'bm25':>8}   (% answer in prompt)"]
    for group in (*CATEGORIES.values(), "all"):
        if group in questions:
            lines.append(
                f"{group:12} {questions[group]:9d} {rates['plugin'][group]:8.1f} "
                f"{rates['recency'][group]:8.1f} {rates['bm25'][group]:8.1f}"
            )
    plugin, bm25 = rates["plugin"]["all"], rates["bm25"]["all"]
    lines.append(f"plugin / bm25: {plugin / bm25:.2f}" if bm25 else "plugin / bm25: n/a")
    lines.append(
        f"memories kept: {results['memories']} of {results['turns']} turns "
        f"({results['memories'] / max(1, results['turns']):.2f} a turn)"
    )
    lines.append(f"context tokens: mean {results['tokens_mean']:.0f}, min {results['tokens_min']} of {BUDGET}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo-format JSON file")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"no LoCoMo data at {args.data}", file=sys.stderr)
        return 2
    print(report(evaluate(json.loads(args.data.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
