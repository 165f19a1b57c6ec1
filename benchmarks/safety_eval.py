"""Quality of the content-safety screen on the development sets.

    python benchmarks/safety_eval.py --data ../shared/data

PII (``pii/pii_dev.json``): span level, per entity type. A gold span counts as found
when a redacted span of the mapped type overlaps it; a redacted span counts as correct
when it overlaps a gold span of the mapped type. Types the screen leaves alone on
purpose (people's names, places, organisations: in-game names) are listed with their
counts. With ``phonenumbers`` installed, its matcher is measured beside the built-in
phone patterns.

Injection (``injection/injection_attacks_dev.json``, ``injection/benign_dev.json``): the
share of attacks' ``user_input`` flagged, per variant, and the share of benign
sentences flagged (false flags), per category.

Ordinary conversation (``locomo/locomo_dev.json``, when present): how many dialogue
turns the screen redacts or flags at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from npc_memory.safety import Screen

GOLD_TYPES = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "card",
    "IBAN_CODE": "iban",
    "IP_ADDRESS": "ip",
    "US_SSN": "ssn",
    "STREET_ADDRESS": "address",
    "ZIP_CODE": "postcode",
    "DOMAIN_NAME": "url",
    "DATE_TIME": "birth_date",
}
"""Data set types in scope and the screen's type for each. DATE_TIME covers every
date; the screen redacts only dates of birth, so its recall there is not a target."""

Spans = list[tuple[str, int, int]]


def score(samples: list[dict[str, Any]], predict: Callable[[str], Spans]) -> dict[str, dict[str, float]]:
    """Per screen type: gold count, predicted count, recall, precision."""
    gold_n: Counter[str] = Counter()
    found: Counter[str] = Counter()
    pred_n: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    for sample in samples:
        gold = [
            (GOLD_TYPES[s["entity_type"]], s["start_position"], s["end_position"])
            for s in sample["spans"]
            if s["entity_type"] in GOLD_TYPES
        ]
        predicted = predict(sample["full_text"])
        for kind, start, end in gold:
            gold_n[kind] += 1
            found[kind] += any(k == kind and s < end and start < e for k, s, e in predicted)
        for kind, start, end in predicted:
            pred_n[kind] += 1
            correct[kind] += any(k == kind and s < end and start < e for k, s, e in gold)
    table: dict[str, dict[str, float]] = {}
    for kind in GOLD_TYPES.values():
        table[kind] = {
            "gold": gold_n[kind],
            "predicted": pred_n[kind],
            "recall": found[kind] / gold_n[kind] if gold_n[kind] else float("nan"),
            "precision": correct[kind] / pred_n[kind] if pred_n[kind] else float("nan"),
        }
    return table


def builtin(screen: Screen) -> Callable[[str], Spans]:
    return lambda text: [(f.type, f.start, f.end) for f in screen(text).findings]


def with_phonenumbers(screen: Screen, leniency: str) -> Callable[[str], Spans] | None:
    """The built-in screen with phones found by the phonenumbers library instead, at
    ``leniency`` (``POSSIBLE`` or ``VALID``); numbers without a country code are tried as
    US, GB, FR and DE numbers. ``None`` when the library is not installed."""
    try:
        import phonenumbers
    except ImportError:
        return None
    level = getattr(phonenumbers.Leniency, leniency)

    def predict(text: str) -> Spans:
        spans = [(f.type, f.start, f.end) for f in screen(text).findings if f.type != "phone"]
        taken = [(s, e) for _, s, e in spans]
        for region in ("US", "GB", "FR", "DE"):
            for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=level):
                start, end = match.start, match.end
                if not any(start < e and s < end for s, e in taken):
                    spans.append(("phone", start, end))
                    taken.append((start, end))
        return spans

    return predict


def fmt(value: float) -> str:
    return "–" if value != value else f"{value:.2f}"


def pii_tables(samples: list[dict[str, Any]], screen: Screen) -> list[str]:
    lines = ["## PII redaction (span level, overlap)", ""]
    systems: list[tuple[str, Callable[[str], Spans]]] = [("built-in patterns", builtin(screen))]
    for leniency in ("POSSIBLE", "VALID"):
        library = with_phonenumbers(screen, leniency)
        if library is not None:
            systems.append((f"phones by phonenumbers ({leniency})", library))
    for name, predict in systems:
        table = score(samples, predict)
        lines += [f"### {name}", "", "| type | gold | redacted | recall | precision |", "|---|---:|---:|---:|---:|"]
        for kind, row in table.items():
            if name != systems[0][0] and kind != "phone":
                continue
            lines.append(f"| {kind} | {row['gold']:.0f} | {row['predicted']:.0f} | {fmt(row['recall'])} | {fmt(row['precision'])} |")
        lines.append("")
    left = Counter(s["entity_type"] for sample in samples for s in sample["spans"] if s["entity_type"] not in GOLD_TYPES)
    lines.append("Not redacted on purpose (in-game names, titles, ages): " + ", ".join(f"{k} {v}" for k, v in left.most_common()))
    lines.append("")
    return lines


def rate_table(title: str, header: str, groups: Iterable[tuple[str, list[bool]]]) -> list[str]:
    lines = [title, "", f"| {header} | lines | flagged | share |", "|---|---:|---:|---:|"]
    total: list[bool] = []
    for name, flags in sorted(groups):
        total += flags
        lines.append(f"| {name} | {len(flags)} | {sum(flags)} | {sum(flags) / len(flags):.2f} |")
    lines.append(f"| **all** | {len(total)} | {sum(total)} | {sum(total) / len(total):.2f} |")
    lines.append("")
    return lines


def injection_tables(attacks: list[dict[str, Any]], benign: list[dict[str, Any]], screen: Screen) -> list[str]:
    by_variant: dict[str, list[bool]] = defaultdict(list)
    for attack in attacks:
        by_variant[attack["injection_variant"]].append(screen(attack["user_input"]).flagged)
    by_category: dict[str, list[bool]] = defaultdict(list)
    for item in benign:
        by_category[item["category"]].append(screen(item["prompt"]).flagged)
    return rate_table("## Injection: attacks flagged, per variant", "variant", by_variant.items()) + rate_table(
        "## Injection: benign lines flagged (false flags), per category", "category", by_category.items()
    )


def dialogue_table(locomo: list[dict[str, Any]], screen: Screen) -> list[str]:
    """Ordinary conversation (LoCoMo turns, no personal data of the kinds in scope, no
    attacks): how many lines the screen touches at all."""
    lines = [
        turn["text"]
        for sample in locomo
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    results = [screen(line) for line in lines]
    redacted = Counter(finding.type for result in results for finding in result.findings)
    flagged = sum(result.flagged for result in results)
    return [
        "## Ordinary conversation (LoCoMo dialogue turns): lines touched",
        "",
        "| lines | redacted spans | flagged lines |",
        "|---:|---:|---:|",
        f"| {len(lines)} | {sum(redacted.values())} {dict(redacted) or ''} | {flagged} ({flagged / len(lines):.2%}) |",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the shared data folder (with pii/ and injection/)")
    parser.add_argument("--show-misses", action="store_true", help="print the attacks not flagged and the benign lines flagged")
    args = parser.parse_args(argv)
    pii_file = args.data / "pii" / "pii_dev.json"
    attacks_file = args.data / "injection" / "injection_attacks_dev.json"
    benign_file = args.data / "injection" / "benign_dev.json"
    missing = [str(path) for path in (pii_file, attacks_file, benign_file) if not path.is_file()]
    if missing:
        print(f"data not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    screen = Screen()
    lines = pii_tables(json.loads(pii_file.read_text(encoding="utf-8")), screen)
    attacks = json.loads(attacks_file.read_text(encoding="utf-8"))
    benign = json.loads(benign_file.read_text(encoding="utf-8"))
    lines += injection_tables(attacks, benign, screen)
    locomo_file = args.data / "locomo" / "locomo_dev.json"
    if locomo_file.is_file():
        lines += dialogue_table(json.loads(locomo_file.read_text(encoding="utf-8")), screen)
    print("\n".join(lines))
    if args.show_misses:
        for attack in attacks:
            if not screen(attack["user_input"]).flagged:
                print("MISS", attack["injection_variant"], repr(attack["user_input"][:160]))
        for item in benign:
            result = screen(item["prompt"])
            if result.flagged:
                print("FALSE", result.reasons, repr(item["prompt"][:160]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
