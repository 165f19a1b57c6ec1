"""Text normalisation for lexical retrieval and extraction: tokens, stop words and a light stemmer."""

from __future__ import annotations

import functools
import re

from npc_memory.rules.tokens import estimate_tokens

TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

STOP_WORDS = frozenset(
    (
        "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
        "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
        "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
        "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
        "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just",
        "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
        "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she",
        "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves",
        "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
        "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
        "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "i'm",
        "you're", "it's", "don't",
    )
)

_SUFFIXES = ("ational", "ization", "fulness", "ousness", "iveness", "ations", "ation", "ness", "ment",
             "ings", "ing", "ers", "er", "ed", "ly")


IRREGULAR = {
    "bought": "buy", "sold": "sell", "stole": "steal", "stolen": "steal", "gave": "give", "given": "give",
    "fought": "fight", "told": "tell", "took": "take", "taken": "take", "brought": "bring", "found": "find",
    "lost": "lose", "saw": "see", "seen": "see", "went": "go", "gone": "go", "made": "make", "paid": "pay",
    "said": "say", "came": "come", "ate": "eat", "drank": "drink", "swore": "swear", "slew": "slay",
    "slain": "slay", "won": "win", "left": "leave", "met": "meet", "kept": "keep", "built": "build",
    "children": "child", "men": "man", "women": "woman", "wolves": "wolf", "knives": "knife",
}
"""Irregular forms folded to their base before stemming."""


@functools.lru_cache(maxsize=16_384)
def stem(word: str) -> str:
    """A light stemmer: folds common irregular forms ("bought" → "buy"), strips plural
    and common suffixes and a final "e", so "price"/"prices" and
    "haggle"/"haggles"/"haggled"/"haggling" meet. Memoised: a game's vocabulary is
    small and every line of every conversation is stemmed."""
    if word.endswith("'s"):
        word = word[:-2]
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")) and len(word) > 4:
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # "stopped" → "stopp" → "stop"
    return word


def terms(text: str) -> list[str]:
    """The normalised terms of ``text``: lower-cased words, stop words removed, stemmed."""
    return [stem(t) for t in TOKEN.findall(text.lower()) if t not in STOP_WORDS]

__all__ = ["STOP_WORDS", "estimate_tokens", "stem", "terms"]
