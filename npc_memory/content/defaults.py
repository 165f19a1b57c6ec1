"""The built-in content the pack schema falls back on: the rule extractor's tags and
cues, and the wording of consolidated memories.

Plain data (no models), so the schema can merge a pack's entries over it. Every cue
word is a case-insensitive regular expression matched as a whole word (``\\b…\\b``);
the words of one cue are tried as alternatives, in order.
"""

from __future__ import annotations

from typing import Any

EXTRACTION_TAGS: dict[str, dict[str, Any]] = {
    # Deeds: what the player did, for or against the NPC and the village.
    "heroic": {
        "description": "the player stood up for others: a rescue, a defence, bravery",
        "group": "deeds",
        "importance": 0.8,
        "valence": "positive",
        "label": "stood up for us",
        "cues": [
            {"who": "any", "words": [
                "saved", r"save (?:us|the village|my \w+)", "rescued?", r"drive (?:them|it|\w+) off",
                "drove (?:them|it) off", "fought off", "defended", "defend", "protected", "protect",
                "stepped in", "hero", "heroic", "bravely", "owe you everything", "owe you my life",
            ]},
        ],
    },
    "combat": {
        "description": "a fight, battle, duel or sparring bout",
        "group": "deeds",
        "importance": 0.55,
        "label": "was in a fight",
        "cues": [
            {"who": "any", "words": [
                "fight", "fought", "fighting", "battle", "swords?", "blades?", r"attack\w*", "bandits?",
                "wolves", "wolf", "raiders?", "killed", "kill", "slay", "slain", "duel", r"spar\w*", "bout",
                "brawl", r"wound\w*", "arrows?", "disarmed", "guard up", "gut you",
            ]},
        ],
    },
    "helpful": {
        "description": "the player helped: fixed, carried or brought something",
        "group": "deeds",
        "importance": 0.5,
        "valence": "positive",
        "label": "helped me",
        "cues": [
            {"who": "player", "words": [
                "let me help", "i'?ll help", "i can help", "i will help", "happy to help", "i fixed",
                "i repaired", "i patched", "i'?ll carry", "i brought you", "of course, i'?m heading",
            ]},
            {"who": "npc", "words": [
                "thank you for the help", "thanks for the help", "thank you for your help", "you helped",
                "you fixed", "you repaired", "you brought", "medicine you brought", "my back thanks you",
            ]},
        ],
    },
    "quest": {
        "description": "a task, errand or bounty offered or taken on",
        "group": "deeds",
        "importance": 0.6,
        "label": "took on a task",
        "cues": [
            {"who": "any", "words": [
                "quest", "bounty", "reward", "errand", "task for you",
                "could you (?:find|deliver|bring|fetch)", "find it for me", "deliver", "retrieve", "escort",
                "take the job", "bring me",
            ]},
            {"who": "npc", "words": ["went missing", "has gone missing", "could you look for"]},
        ],
    },
    "theft": {
        "description": "stealing, pickpocketing or robbery",
        "group": "deeds",
        "importance": 0.65,
        "valence": "negative",
        "label": "stole",
        "cues": [
            {"who": "any", "words": ["steal", "stole", "stolen", "thief", r"pickpocket\w*", "robbed"]},
        ],
    },
    # Exchanges: goods and money changing hands.
    "trade": {
        "description": "buying, selling, prices and haggling",
        "group": "exchanges",
        "importance": 0.3,
        "label": "traded with me",
        "cues": [
            {"who": "any", "words": [
                "buy", "buys", "bought", "sell", "sells", "sold", "price", "prices", r"haggl\w*",
                r"bargain\w*", r"purchas\w*", "how much", "for sale", "paid", "pay", "pays", "do i owe",
                "cost", "costs", "a deal", r"\d+ (?:gold|silver|copper)",
                "(?:two|three|five|eight|ten|twelve|fifteen|twenty|thirty|forty|fifty)"
                " (?:gold|silver|copper)",
            ]},
        ],
    },
    "gift": {
        "description": "the player gave something for nothing",
        "group": "exchanges",
        "importance": 0.5,
        "valence": "positive",
        "label": "gave a gift",
        "cues": [
            {"who": "player", "words": [
                "for you", "take (?:this|these|them)", "keep it", "no charge", "free of charge", "on me",
                "as a thank-you",
            ]},
            {"who": "any", "words": ["gift", "present", "take this purse"]},
        ],
    },
    # Hostility: what the player did against the NPC; never a habit.
    "threat": {
        "description": "the player threatened or intimidated the NPC",
        "group": "hostility",
        "importance": 0.75,
        "valence": "negative",
        "habitual": False,
        "label": "threatened me",
        "cues": [
            {"who": "player", "words": [
                "or else", "you'?ll regret", "watch your back", "be a shame if", "nothing will happen",
                "i'?ll (?:hurt|kill|gut|burn|break|find) you", "don'?t make me", "i know where you live",
                "pay what",
            ]},
            {"who": "npc", "words": ["are you threatening", "you threatened", "threatening me"]},
        ],
    },
    "insult": {
        "description": "the player insulted or mocked the NPC",
        "group": "hostility",
        "importance": 0.45,
        "valence": "negative",
        "habitual": False,
        "label": "insulted me",
        "cues": [
            {"who": "player", "words": [
                "fools?", "idiot", "stupid", "useless", "lout", "worthless", "pathetic", "coward", "scum",
                "a joke", "fairy tale", "shut up", "moron",
            ]},
        ],
    },
    "betrayal": {
        "description": "lies, broken promises or treachery",
        "group": "hostility",
        "importance": 0.85,
        "valence": "negative",
        "habitual": False,
        "label": "betrayed my trust",
        "cues": [
            {"who": "any", "words": [
                r"betray\w*", "traitor", r"double-cross\w*", "you lied", "lied to me", "cheated (?:me|us)",
                "broke your promise", "broken promise", "turned on (?:me|us)", "sold (?:us|me) out",
            ]},
        ],
    },
    # Confidences.
    "secret": {
        "description": "a confidence shared in private",
        "group": "confidences",
        "importance": 0.7,
        "habitual": False,
        "label": "shared a secret",
        "cues": [
            {"who": "any", "words": [
                "secret", "between us", "don'?t tell", "no one must know", "keep (?:it|this) quiet",
                "lips are sealed", "password", "swear it", "confide",
            ]},
        ],
    },
    # Personal facts: what the player told about themselves; general knowledge.
    "personal": {
        "description": "something the player told about themselves: origin, family, work",
        "group": "personal",
        "importance": 0.5,
        "kind": "semantic",
        "label": "told me about themselves",
        "cues": [
            {"who": "player", "words": [
                "i served", "i grew up", "i was born", "i come from", "i'?m from",
                "my (?:father|mother|brother|sister|husband|wife|family)", "i work as", "i used to be",
                "i took over",
            ]},
        ],
    },
}
"""The rule extractor's tags, in the order their groups' memories are listed on ties."""

NEGATIONS: list[str] = [
    "not", "no", "never", "won'?t", "don'?t", "didn'?t", "can'?t", "isn'?t", "wasn'?t", "refuse",
]
"""Words that, up to ``negation_reach`` words before a cue, cancel it ("I won't steal")."""

HABIT_MARKERS: list[str] = [
    "always", "every (?:night|day|week|time|morning|evening)", "as usual", "same as always", "each time",
]
"""Words that make a deed or exchange a habit (a procedural memory)."""

HEAT_WORDS: list[str] = [
    "killed", "dead", "everything", "my life", "never forget", r"burn\w*", "gut", "regret", "traitor",
    "please",
]
"""Words that make a conversation more intense."""

MEMORY_TEMPLATE = '{player} {habitually}{label} ({speaker}: "{quote}")'
HABITUALLY = "habitually "

SUMMARY_TEMPLATES: dict[str, str] = {
    "trade": "{player} is a regular customer",
    "helpful": "{player} often lends a hand",
    "heroic": "{player} has proved brave again and again",
    "combat": "{player} is no stranger to a fight",
    "gift": "{player} is generous with gifts",
    "quest": "{player} takes on tasks for us",
    "secret": "{player} confides in me",
    "theft": "{player} is a thief",
    "threat": "{player} is dangerous and makes threats",
    "insult": "{player} is rude to me",
    "betrayal": "{player} cannot be trusted",
    "personal": "{player} has told me a lot about themselves",
}
HABIT_TEMPLATES: dict[str, str] = {
    "trade": "{player} usually comes to trade in the {time}",
    "theft": "{player} usually steals in the {time}",
}
SUMMARY_FALLBACK = "{player} and I keep dealing with {tag}"
HABIT_FALLBACK = "{player} usually shows up for {tag} in the {time}"
TIMES_SUFFIX = " ({count} times)"
