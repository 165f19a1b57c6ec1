"""The built-in content the pack schema falls back on: the rule extractor's tags and
cues, and the wording of consolidated memories.

Plain data (no models), so the schema can merge a pack's entries over it. Every cue
word is a case-insensitive regular expression matched as a whole word (``\\b…\\b``);
the words of one cue are tried as alternatives, in order.
"""

from __future__ import annotations

from typing import Any

_ANIMALS = (r"(?:ewes?|sheep|lambs?|cows?|calf|calves|goats?|dogs?|horses?|pony|ponies|mules?|pigs?|hens?"
            r"|ox|oxen|cats?|geese|goose|heifers?|bullocks?|donkeys?|flock|herd)\b")
"""Saving one of these is help, not heroism (that is saving a person)."""
_SOMEONES = rf"(?:the|my|your|our) (?!{_ANIMALS})\w+"
"""Someone of the NPC's or the player's: "my boy", "the miller's wife", not "my ewe"."""

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
                r"saved(?! (?:up|for|enough|money|coin|a bit|my wages|\w+ crowns"
                r"|(?:me|us) (?:an?|the|some) \w+))",
                r"save (?:us|the village|my \w+)", "rescued?", r"(?:drove|chased|fought) off",
                r"(?:drive|drove|driven|chased?) (?:them|it|(?:the|those|some|a|an) \w+|\w+) (?:off|away)",
                "drove (?:them|it) off", "fought off", "defended", "defend", "protected", "protect",
                "stepped in", "bravely", "owe you everything", "owe you my life",
                r"owe (?:you|ye) more(?:'n| than) (?:i|we) (?:can|could) (?:ever )?(?:re)?pay",
                rf"pulled (?:her|him|them|me|{_SOMEONES}) (?:out|free|clear|up|from)",
                rf"(?:brought|carried|dragged|got|fished) (?:her|him|them|me|{_SOMEONES})"
                r" (?:out|clear|free|back alive)",
                r"(?:brought|carried) (?:\w+ ){1,2}back on (?:your|his|her|their|my) (?:shoulders?|back)",
                r"cut (?:me|him|her|them|my \w+) (?:down|free|loose)", "cut my ropes?",
                r"saved my (?:neck|skin|hide|life)",
                r"(?:jumped|dove|dived|went) (?:in|into|back in|back into)", "shielded", "took the blow",
            ]},
        ],
    },
    "combat": {
        "description": "a fight, battle, duel or sparring bout",
        "group": "deeds",
        "importance": 0.55,
        "label": "got into a fight",
        "cues": [
            {"who": "any", "words": [
                "fight", "fought", "fighting", "battled?", "attacked", "killed", "kill", "slay", "slew",
                "slain", "dueled", "duelled", r"sparr(?:ed|ing)", "brawled", "wounded", "disarmed",
                "brawls?", "started a fight", "guard up", "gut you", r"drive (?:them|it|\w+) off",
                "drove (?:them|it) off",
                r"swung at", r"went (?:at|for) (?:me|him|her|them|three|two|four|the)", "punched", "kicked",
                r"hit (?:me|him|her|them)", r"struck (?:me|him|her|them|at)", "stabbed",
                r"knocked (?:me|him|her|them)",
                r"broke (?:my|his|her) (?:nose|jaw|arm|head)", r"flattened", r"cracked (?:him|her|the \w+)",
                r"threw (?:him|her|them|the \w+) (?:out|down|off|through)",
                r"held (?:the |off )?(?:\w+ )?"
                r"(?:gate|line|door|bridge|left|right|wall|pass|ford|them|\w+ of the gate)",
                r"put (?:an? |\w+ )?(?:arrow|bolt|blade|knife|sword|spear) (?:in|into|through)",
                r"put (?:\w+ )?in the (?:water|river|ground|dirt|mud)", r"shot (?:him|her|it|them|the \w+)",
                r"put (?:him|her|them) (?:through|over|out of) (?:the|a|your|my) \w+",
                r"ran (?:a |the )?(?:\w+ )?(?:gang|band|pack|them|him|her) (?:of \w+ )?off",
                r"stood (?:the|on the) (?:\w+ )?(?:wall|gate|line|bridge)",
                r"fought (?:beside|with|alongside) (?:me|us)",
                r"(?:fought|stood) (?:on|at) (?:my|our) side",
                r"had (?:the one|him|her) [\w ]{0,20}on the ground",
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
                "i repaired", "i patched", "i'?ll carry", "of course, i'?m heading",
                "mended", "lashed", "hauled", "swept", "rebuilt",
                r"set (?:his|her|the|a) (?:\w+ )?(?:leg|arm|bone)", r"drove (?:them|it|the \w+) back",
                r"found (?:it|her|him|them|your \w+)", r"(?:carried|fetched|brought back|rounded up|put out)",
            ]},
            {"who": "any", "words": [
                rf"(?:pulled|dragged|got|fished|brought) (?:the|my|your|a|our) {_ANIMALS}"
                r" (?:out|free|clear|back|home)",
            ]},
            {"who": "npc", "words": [
                "thank you for the help", "thanks for the help", "thank you for your help", "you helped",
                "you fixed", "you repaired", "you brought", "medicine you brought", "my back thanks you",
                "good eye", "sharp eyes?", "well spotted", "thanks to you",
                r"couldn'?t have done it without you",
                "you mended", "you found", r"you (?:carried|fetched|hauled|swept|cleared|dug|caught)",
            ]},
        ],
    },
    "quest": {
        "act": "speech",
        "description": "a task, errand or bounty offered or taken on",
        "group": "deeds",
        "importance": 0.6,
        "label": "took on a task",
        "cues": [
            {"who": "any", "words": [
                "quest", "bounty", "reward", "errand", "task for you", "i promise", "you have my word",
                "could you (?:find|deliver|bring|fetch)", "find it for me", "deliver", "retrieve", "escort",
                "take the job", "bring me",
            ]},
            {"who": "player", "words": [
                "i'?ll (?:find|fetch|bring|carry|deliver|scout|track|hunt|copy|look for)"
                " (?:her|him|it|them|the|your|you|a|an|some|that|this|those|these)",
                "i'?ll go (?:at|tonight|tomorrow|today|now|first thing|before)", "i'?ll do it",
                "i'?ll have (?:it|them|her|him) back", "leave it (?:to|with) me", "consider it done",
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
            {"who": "any", "words": ["steal", "stole", "stolen", "thief", r"pickpocket\w*", "robbed",
                r"helped (?:my|him|her|them)sel(?:f|ves) to", r"up (?:your|her|his) sleeve",
                r"lifted (?:my|a|the|his|her)",
                "pinched", "nicked", "swiped", "snatched", "pocketed", r"(?:made|ran|walked) off with",
                r"walk out with", r"took (?:it|them|my \w+) (?:off|from)", "finder'?s fee"]},
        ],
    },
    # Exchanges: goods and money changing hands.
    "trade": {
        "act": "speech",
        "description": "buying, selling, prices and haggling",
        "group": "exchanges",
        "importance": 0.3,
        "label": "traded with me",
        "cues": [
            {"who": "any", "words": [
                "buy", "buys", "bought", "sell", "sells", "sold", "price", "prices", r"haggl\w*",
                r"bargain\w*", r"purchas\w*", "how much", "for sale", "paid", "pay", "pays", "do i owe",
                "cost", "costs", "a deal", "deal",
                r"\d+ (?:gold|silver|copper|coins?|crowns?|shillings?|pennies|pence|marks|florins?|ducats?)",
                "(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty"
                "|forty|fifty|a hundred)(?:[- ]\\w+)? "
                "(?:gold|silver|copper|coins?|crowns?|shillings?|pennies|pence"
                "|marks|florins?|ducats?)",
            ]},
        ],
    },
    "gift": {
        "description": "the player gave something for nothing",
        "claimable": False,
        "group": "exchanges",
        "importance": 0.5,
        "valence": "positive",
        "label": "gave a gift",
        "cues": [
            {"who": "any", "words": [
                r"(?:it'?s|this is|these are|they'?re|that'?s|this|these|them|it|one|something|gift|present)"
                " (?:all )?for you", "take (?:this|these|them)",
                r"(?:it'?s|this is|these are|they'?re) for your",
                r"put (?:this|these|it) (?:round|on|around|over) you",
                r"gave (?:every|all|the|my|it|them)(?: \w+){0,2} to (?:the|a|an)"
                r" (?:orphans?|poor|temple|widows?|chapel|church)",
                "no payment", r"keep your (?:coin|money|silver|copper|penny)",
                r"for the (?:poor|poor box|orphans|temple)",
                "keep it", "no charge", "free of charge", "on me",
                "on the house", "as a thank-you", "gifts?", "present", "take this purse", "gave you",
                "you gave me", r"(?:i|we) brought you (?:these|this|some|a|an) [\w' ]+ (?:as a|for your)",
            ]},
        ],
    },
    # Hostility: what the player did against the NPC; never a habit.
    "threat": {
        "act": "speech",
        "description": "the player threatened or intimidated the NPC",
        "group": "hostility",
        "importance": 0.75,
        "valence": "negative",
        "habitual": False,
        "conditional": True,
        "label": "threatened me",
        "cues": [
            {"who": "player", "words": [
                "or else", "you'?ll regret", "watch your back", "be a shame if", "nothing will happen",
                "i'?ll (?:hurt|kill|gut|burn|break|find|cut|end|skin|bury|drown|hang|stab|strangle|wring)"
                " (?:you|your)", "don'?t make me", "i know where you live", "pay what",
                "(?:break|snap|cut|slit|wring) your (?:arm|arms|legs?|neck|fingers?|jaw|nose|face|throat|head"
                "|skull)", "you'?ll be (?:sorry|dead|buried|next)", "accidents happen", "would be a pity",
                "be a pity if", "i'?d hate for", "keep your mouth shut", "sleep with one eye open",
                r"(?:it'?d|it would) be a (?:shame|pity)",
                r"your (?:\w+ )?(?:house|home|stall|shop|warehouse|roof|barn|forge|inn|family|wife|husband"
                r"|daughter|son|children|kids|girl|boy|mother|father|little one) (?:might|would|could|may)\b",
                "you'?ll (?:burn|hang|bleed|pay for)",
            ]},
            {"who": "npc", "words": ["are you threatening", "you threatened", "threatening me"]},
        ],
    },
    "insult": {
        "act": "speech",
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
                r"(?:face|voice|breath) like",
                r"(?:tastes?|smells?|sounds?|looks?) like (?:a |an |you |something )?"
                r"(?:dead|drowned|rotten|wet|pig|dog|rat|horse|goat|mud|piss|swill)",
                r"(?:i'?ve|i have) (?:had|heard|seen|tasted|met) (?:better|worse)", "better company",
                r"with more (?:feeling|sense|wit|talent|brains)", "halfwit", "simpleton", "dolt", "oaf",
                "bumpkin",
                "nitwit", "dullard", "swine", "old fool", "ugly", r"crawl(?:ed)? into", "get fat",
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
        "private": True,
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
        "act": "fact",
        "private": True,
        "description": "what the speaker told about themselves: name, origin, family, work, likes, plans",
        "group": "personal",
        "importance": 0.5,
        "kind": "semantic",
        "label": "told me about themselves",
        "cues": [
            {"who": "any", "words": [
                # name and origin
                "my name(?:'s| is)", "call me", "i'?m called", "i grew up", "i was born", "i come from",
                "i'?m (?:originally )?from", "my hometown", "where i grew up",
                # family and home
                "my (?:father|dad|mother|mom|mum|parents|brother|sister|siblings?|husband|wife|partner"
                "|boyfriend|girlfriend|fianc[eé]e?|sons?|daughters?|kids|children|child|family|grandma"
                "|grandmother|grandpa|grandfather|cousin|aunt|uncle|niece|nephew|home|house)",
                r"i(?: have|'ve|'d| had) (?:a|an|two|three|four|five|six|\d+) (?:\w+ )?(?:kids|children|sons?"
                "|daughters?|brothers?|sisters?|twins?|dogs?|cats?|puppy|puppies|kittens?|horses?|pets?)",
                r"i'?m (?:the|his|her) [\w']+ (?:\w+ )?(?:son|daughter|wife|husband|brother|sister|widow"
                "|nephew|niece|heir|bastard)",
                "i'?m (?:married|engaged|single|divorced|pregnant|retired)", "i live", "i moved",
                # work and study
                "i work", "i'?m working (?:as|at|on|for)", "my (?:job|boss|work|career|business|shop|team)",
                "new job", "i got (?:a|the) job", "i'?m studying", "i study", "i'?m training",
                r"i volunteer\w*",
                "i used to be", "i served", "i took over", "i run a",
                r"i'?m an? (?:\w+ )?(?:\w+(?:er|or|ist|ian)|nurse|chef|cook|guard|soldier|knight|mage|priest"
                "|monk|smith|courier|miner|farmer|hunter|sailor|scout|student|parent|mom|dad)",
                # likes and dislikes
                "i (?:really |absolutely |just )?(?:love|like|enjoy|adore|hate|prefer)", "i can'?t stand",
                "i'?m (?:really |so |a (?:big |huge )?)?(?:into|fan)", "my fav(?:ou?rite)?", "i'?m allergic",
                "i'?m (?:a )?(?:vegan|vegetarian)",
                # goals, plans and pursuits
                "i want (?:to|a|an)", "i'?d (?:love|like) to", "i hope to", "i plan(?:ned)? to",
                "i'?m planning", "i'?m going to", "i'?m gonna", "my (?:goal|dream|plan)", "i dream",
                "i'?m thinking (?:of|about)", "i'?m heading", "i'?m saving (?:up )?for", "i'?m hoping",
                r"i'?(?:ve|ll) sav(?:ed|e) (?:up )?(?:for|to)",
                "i'?m learning", r"i'?ve been \w+ing",
                "my hobby", "i took up", "i (?:just |recently )?(?:started|adopted|joined)", "i'?ve started",
                "my (?:dog|cat|puppy|kitten|horse|pet|pets)", "my first",
                # a life told in few words, the "I" left out ("Born in Dunmere, aye.")
                "born (?:in|at|on|up|out|under)", "raised (?:in|on|by|up)", "brought up (?:in|on|by)",
                "i hail", "hail from", "(?:youngest|eldest|oldest|middle one) of",
                "only (?:child|son|daughter)",
                "(?:my|our) (?:mam|mum|ma|da|pa|pap|twin|twins|missus|lad|lass|boy|girl|bairns?|little ones"
                "|kin|folks?|people|old man|old woman)",
                "widow(?:ed|er)?", "orphan(?:ed)?", "i (?:married|wed)", "(?:my|her|his) (?:late )?husband",
                "for a living", "by trade", "apprenticed?", "looking for work",
                "i'?m (?:looking|after|out) for (?:work|a place|a job|my|a trade)",
                r"i'?m after (?:\w+ )?(?:work|a job|a place|a post|a trade)",
                "i keep (?:bees|sheep|goats|hens|pigs|cows|a |an |the )",
                r"i (?:send|write|visit|go|walk|pray|light|ride) [^.!?]{0,40}\bevery (?:day|week|month|year"
                "|morning|evening|night|sunday|spring|summer|autumn|winter|market)",
                "i (?:catch|carry|make|mend|sell|draw|grow|breed|fish|hunt|trap|weave|brew|bake|teach|tend"
                "|herd|sweep|write|copy|build|sail|drive|haul|forge|carve|sew|paint|sing|play) \\w+ for",
                "i (?:served|soldiered|fought) (?:in|with|under|for)", "(?:i'?ve been|i was) (?:a|an) \\w+",
                "i'?ve been on the road", "on the road for",
                "(?:\\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty"
                "|forty|fifty) (?:years?|winters?|summers?)",
                "i'?m (?:\\d+|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty"
                "|sixty|seventy)",
                "i (?:was|turned) (?:\\d+|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty"
                "|forty|fifty|sixty|seventy)",
                "(?:thirty|forty|fifty|sixty|twenty)(?:-\\w+)? come",
                "(?:real|full|family|proper|given|true) name",
                "i (?:can'?t|couldn'?t) (?:abide|bear|stomach|eat|stand)",
                "i (?:detest|loathe|despise|fancy)",
                "makes? me (?:swell|sick|ill|sneeze|itch)", "i'?m (?:afraid|scared|terrified|fond) of",
                "i'?d (?:walk|go|give|sell|swim) [\\w' ]+ for (?:a |an |one |some )?"
                "(?:good |decent |proper )?\\w+",
                "(?:losing|lost) (?:my|the) (?:sight|hearing|eye|leg|arm|hand)",
                "bad (?:shoulder|leg|back|knee|hip|chest|eye|heart|lungs?)", "i'?m saving", "i mean to",
                "i'?m (?:bound|headed|walking|making) (?:for|to)",
                "i'?m staying", "i'?ve been taken on", "i keep the \\w+ faith", "i follow the",
            ]},
        ],
    },
}
"""The rule extractor's tags, in the order their groups' memories are listed on ties."""

PERSONAL_QUESTIONS: list[str] = [
    r"where (?:are|do|did|were) you", r"\byour name", r"\bname\b", r"what (?:brings|brought) you",
    r"who are you", r"what do you do", r"how old",
    r"your (?:trade|work|people|family|kin|folks?|home|plans?|line)",
    r"are you (?:from|married|wed|new|staying|stopping|with|of|a |an )",
    r"have you (?:any |a |an |kin|family|children)", r"and (?:you|yourself)\?",
    r"what do you (?:like|want|fancy|eat|drink)", r"(?:do|did) you (?:live|come|grow|work)",
    r"what (?:are|were) you (?:before|doing)", r"you'?re not (?:of|from)", r"you'?ve the look of",
    r"you (?:look|sound) like (?:a|an) ", r"what'?s (?:your|it) to be", r"anyone waiting",
    r"business(?: here| in [\w ]+)?(?=\?)", r"what (?:line|kind) of work",
]
"""An NPC's words asking the player about themselves: the player's next line, when it
states something, is what they told about themselves (``Pipes. Proper hill pipes.``)."""

DEAL_MARKERS: list[str] = [
    r"^\W*(?:done|deal|agreed|sold|settled|square)$", "it'?s a deal", "shake on it",
    "pleasure doing business",
    r"(?:i|we|you)(?:'ve| have)? (?:paid|bought|sold|traded)(?: it| them)? (?:to |from )?(?:you|me|us)",
    r"(?:it'?s|she'?s|he'?s|they'?re|that'?s) yours", r"^\W*counted\b", "we'?re square",
    r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty)"
    r" it is$",
    r"here'?s (?:the|your|my|\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty"
    r"|forty|fifty)",
    r"paid (?:in full|up|for)", "consider .{0,30}settled",
]
"""Words that close an exchange (said by either, not asked nor negated): the trading in
the lines just before them was done with the player. Trading said to be a habit ("as
usual") needs none."""

HARM_TO_NPC: list[str] = [
    r"(?:swung|swing|lunged|went|came|threw \w+) at me", "went for me",
    r"(?:hit|punched|kicked|struck|stabbed|attacked|knocked|hurt|shoved|jumped|beat) me",
    r"my (?:nose|jaw|face|head|ribs|eye|arm|teeth|tooth|lip)",
]
"""Words that make the player's deed one done to the NPC itself: a fight against it."""

GRATITUDE: list[str] = [
    r"thank(?:s| you)\W+(?:truly|kindly|so much|very much|from the bottom)",
    r"thank(?:s| you),? for (?!asking|coming|nothing|stopping|listening|your (?:custom|business|time|company)"
    r"|the (?:compliment|company|chat|talk))\w+",
    r"thanks to you", r"(?:that'?s|it'?s|all) your doing", r"bless you", r"i owe you",
    r"(?:i'?m|we'?re|i am|we are) (?:so |truly |very |ever so )?(?:grateful|in your debt)", r"much obliged",
    r"you'?ve saved (?:me|us|my|our)", r"you'?re a (?:treasure|godsend|saint|lifesaver|marvel|wonder)",
    r"you'?ll spoil me", r"(?:good|kind) of you",
]
"""The NPC thanking the player ("Thank you, truly.", "That's your doing.", "You've saved me an
hour."): the player did something for it. Not a bare "thanks", which is also politeness."""

NEGATIONS: list[str] = [
    "not", "no", "never", "won'?t", "don'?t", r"didn'?t(?! (?:have|need) to\b)", "can'?t", "isn'?t",
    "wasn'?t", "refuse",
    "couldn'?t", "wouldn'?t", "haven'?t", "hasn'?t", "hadn'?t", "aren'?t", "weren'?t", "nothing",
    "nobody", "neither", "nor",
]
"""Words that, up to ``negation_reach`` words before a cue, cancel it ("I won't steal"; not
"you didn't have to put him through the window", which says it was done)."""

HYPOTHETICALS: list[str] = [
    "if", "unless", "would", "could", "might", "maybe", "perhaps", "imagine", "suppose", "supposing",
    "wish", "should have", "would have", "could have",
    r"(?:i|you|we)'?d(?! (?:my|a|an|the|his|her|their|our|your|no|nothing|been|had|got|just|already)\b)",
    "must be", "in case",
    "pretend", "someday", "one day", "what if",
]
"""Words that make a clause a hypothetical, a conditional or a guess: no deed or act
happened ("If they came back I would hide", "you must be a good salesperson")."""

HEARSAY: list[str] = [
    "heard", "they say", "people say", r"(?:they'?re|people are|folk are|everyone'?s) saying", "word is",
    r"rumou?rs?", "apparently", "supposedly",
    "according to", "said", "says", "told", "tells",
]
"""Words that make a clause reported speech: what someone else said or did, not a deed of
either speaker ("I heard that Bram stole the horse")."""

FIGURES: list[str] = [
    "what an?", "it'?s a steal", "killing me", "how (?:nice|lovely|great|kind|sweet)", "oh,? look",
    "you must", "just kidding", "kidding", "joking",
]
"""Figures of speech and exclamations that look like a deed but are not one."""

REQUESTS: list[str] = ["(?:could|would|can|will) you", "please"]
"""How a request opens: a question that asks for something is an act of the speaker
("Could you deliver this letter?")."""

OPENERS: list[str] = [
    "oh", "well", "yes", "yeah", "yep", "no", "nope", "and", "but", "so", "then", "look", "listen",
    "honestly", "actually", "hey", "ha", "haha", "wow", "now", "also", "anyway", "ok", "okay",
    "alright", "sorry", "fine", "aye", "right", "together", "sure", "today", "yesterday", "tonight",
    "tomorrow", "last", "night", "week", "month", "year", "this", "morning", "earlier", "later",
    "finally", "once", "still", "just", "really", "besides", "plus", "um", "uh", "hmm", "ah",
    "recently", "lately", "guess", "what",
]
"""Words skipped at the start of a clause before its subject is read."""

IMPERATIVES: list[str] = [
    "take", "keep", "have", "accept", "pay", "give", "let", "come", "bring", "hand", "here", "here's",
    "meet", "follow", "help", "leave", "get", "stay", "watch", "don't", "go", "tell", "find", "deliver",
]
"""Verbs that open a command or an offer: the speaker's own act ("Take this, it's for you")."""

SMALL_TALK: list[str] = [
    "hi", "hello", "hey", "thanks", "thank", "bye", "goodbye", "morning", "evening", "night", "good",
    "great", "nice", "awesome", "cool", "wow", "glad", "happy", "hear", "sound", "sounds", "amazing",
    "fantastic", "wonderful", "lovely", "weather", "care", "soon", "later", "see", "talk", "chat",
    "catch", "yeah", "yes", "okay", "ok", "sure", "totally", "definitely", "really", "much", "lot",
    "well", "fun", "luck", "feel", "means", "know", "think", "guess", "get", "got", "going", "go",
    "thing", "things", "stuff", "time", "day", "today", "way", "right", "keep", "let", "like",
    "always", "bit", "little", "lots", "pretty", "super", "so", "totally", "exactly", "agree",
    "true", "enough", "fine", "can't", "complain", "anytime", "friend", "dear", "buddy", "also",
    "doing", "done", "make", "made", "look", "looks", "lookin", "seems", "sounds", "want",
    "pleased", "meet", "met", "meeting", "welcome", "pleasure", "sir", "madam", "traveller", "stranger",
]
"""Words that carry no information on their own: greetings, thanks, filler. A line needs
``gist_min_terms`` other words to be remembered as gist."""

EMOTION_WORDS: list[str] = [
    r"lov\w*", r"hat\w*", r"scar\w*", r"afraid", r"fear\w*", r"proud", r"excit\w*", r"thrill\w*",
    r"sad\w*", r"cr(?:y|ied)", r"tears?", r"ang(?:ry|er)", r"furious", r"upset", r"worr\w*",
    r"stress\w*", r"grief", r"griev\w*", r"heartbr\w*", r"miss(?:ed)?", r"lost", r"died", r"dead",
    r"hurt", r"sick", r"injur\w*", r"terrif\w*", r"overjoyed", r"grateful", r"ashamed", r"lonely",
]
"""Words that show feeling; they raise the importance of a remembered line."""

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
CLAIM_TEMPLATE = '{player} told me they {habitually}{label} ({speaker}: "{quote}")'
OFFER_TEMPLATE = '{player} promised me ({speaker}: "{quote}")'
FACT_TEMPLATE = '{player} told me: "{quote}"'
GIST_TEMPLATE = '{player} said: "{quote}"'
NPC_TEMPLATE = 'I told {player}: "{quote}"'
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

PLAYER_ATTRIBUTES: dict[str, dict[str, Any]] = {
    # One value at a time: a newer statement takes the older one's place.
    "name": {"single": True, "cues": [
        r"my name(?:'s| is)", r"call me", r"i'?m called", r"the name'?s", r"name'?s", r"my real (?:name|one)",
        r"my (?:family|full|true|given) name",
    ]},
    "origin": {"single": True, "cues": [
        r"i grew up", r"i was (?:born|raised)", r"i come from", r"i'?m (?:originally |really )?from",
        r"my hometown", r"where i grew up", r"born (?:in|at|on)", r"[a-z]+-born", r"raised (?:in|at|on)",
        r"i'?m [a-z]+(?: [a-z]+)?,? (?:from|of) ", r"(?:lived|living) in \w+ all my life",
    ]},
    "home": {"single": True, "cues": [
        r"i live (?:in|at|on|by|near|out|up|down|past)", r"i'?m living", r"i'?m staying", r"i lodge",
        r"i'?ve (?:a|my) (?:place|room|house|cottage|farm)", r"my (?:home|house|cottage|farm) is",
    ]},
    "trade": {"single": True, "cues": [
        r"by trade", r"for a living", r"my (?:trade|work|job|craft) is", r"i work (?:as|at|for|in|the)",
        r"i'?m an? (?:\w+ )?(?:smith|cooper|carter|tanner|weaver|miller|baker|farmer|trapper|hunter|soldier"
        r"|sailor|fisher\w*|merchant|trader|pedlar|peddler|tinker|mason|carpenter|apprentice|clerk|scribe"
        r"|guard|healer|herbalist|minstrel|bard|courier|messenger|thief-taker|shepherd|drover|cook|brewer)",
        r"apprenticed", r"i (?:trap|farm|fish|trade|sell|sweep|carry|mend|forge|brew|hunt) ",
    ]},
    "goal": {"single": True, "cues": [
        r"i want (?:to|a|an|the)", r"i'?m saving (?:up )?(?:for|to)", r"saving (?:up )?for", r"i mean to",
        r"i'?(?:ve|ll) sav(?:ed|e) (?:up )?(?:for|to)",
        r"i hope to", r"my dream", r"i plan to", r"i'?m (?:going|heading|walking|bound) (?:to|for)",
        r"here to",
    ]},
    # Several values: a statement is added beside the others (replacing one only when
    # the player corrects themselves).
    "family": {"single": False, "cues": [
        r"my (?:father|dad|da|mother|mum|mam|ma|mom|parents|brothers?|sisters?|siblings|husband|wife"
        r"|sons?|daughters?|children|kids|family|kin|twin|uncle|aunt|cousin|grandmother|grandfather|gran)",
        r"i(?:'ve| have| had|'d) (?:a|an|one|two|three|four|five|six|no) (?:\w+ )?(?:brothers?|sisters?|sons?"
        r"|daughters?|children|kids|kin|twin|wife|husband)",
        r"i'?m (?:married|wed|widowed)", r"youngest of", r"eldest of", r"oldest of",
    ]},
    "likes": {"single": False, "cues": [
        r"i (?:love|like|enjoy|adore|fancy)", r"my favou?rite", r"i'?m fond of", r"nothing (?:beats|like)",
    ]},
    "dislikes": {"single": False, "cues": [
        r"i (?:hate|loathe|dislike|detest)", r"i can'?t (?:stand|abide|stomach|eat)",
        r"i'?m allergic", r"make(?:s)? me (?:swell|sick|ill)",
    ]},
}
"""What a player says about themselves, filed by attribute (``[knowledge.attributes]``):
each attribute's cues (case-insensitive regular expressions, matched as whole words in
what the player said) and whether it holds one value at a time."""

CORRECTIONS: list[str] = [
    r"(?:the )?truth is",
    r"(?:that|it) (?:was|wasn'?t|isn'?t|is not|was not|'s not) (?:quite |strictly |really )?true",
    r"not (?:quite|strictly|entirely) true", r"i lied", r"i meant", r"forget (?:what|that) i said",
    r"to be honest", r"own up", r"i (?:said|told you)\b[^.!?]*\.\s+(?:it'?s|it was|i'?m|i was|i)\b",
    r"i said [^.!?]*because", r"my real (?:name|one)", r"what i (?:really|actually) ", r"actually",
    r"i didn'?t (?:really )?mean", r"(?:that|it) was the ale talking", r"about that\.",
]
"""A player owning up to something they said before: what they say next about the same
attribute corrects it."""

CHANGES: list[str] = [
    r"now\b", r"these days", r"change of plan", r"no longer", r"not any ?more", r"any ?more",
    r"since (?:spring|summer|autumn|winter|then|last)", r"from now on",
]
"""A player saying that something about them changed: what they say next about the same
attribute replaces it without making them a liar."""

BACK_REFERENCES: list[str] = [
    r"i (?:said|told (?:you|them|everyone|folk|people|the \w+))\b", r"said i\b", r"what i said",
    r"i did (?:say|tell)\b", r"i (?:know|admit) i said", r"i'?d said", r"i (?:was|went) telling",
]
"""A player referring back to what they said before ("I said Dunmere…", "Forget what I said
about…", "I did say that."): with one of the ``corrections``, ``changes`` or
``retractions`` in the same line or the one after, they take back what they said."""

REMINDERS: list[str] = [
    r"you (?:said|told|claimed|were saying|say|swore|reckoned)\b", r"you'?d (?:said|told)\b",
    r"(?:so )?you'?re the one who",
]
"""An NPC recalling what the player said before ("You said you had no kin at all"): the
words of such a line tell which earlier words a player taking them back means."""

RETRACTIONS: list[str] = [
    r"i (?:didn'?t|did not|don'?t|do not|wasn'?t|was not|haven'?t|have not|hadn'?t|never|ain'?t)\b",
]
"""A sentence a player takes back what they referred back to with ("Said I wanted a sword.
I don't.", "About that boar I said I killed. … I didn't kill him."); it counts only at
the start of a sentence, after a back-reference (one of ``back_references``)."""

DENIALS: list[str] = [
    r"(?:it |that )?(?:wasn'?t|was not|weren'?t|were not) (?:me|us|my doing|our doing)\b",
    r"^(?:no,? )?not me\b", r"i'?m innocent", r"i had nothing to do with",
    r"i (?:never|didn'?t|did not|would never|wouldn'?t) (?:even )?(?:do|did|steal|stole|take|took|touch"
    r"|touched|lay|laid|hurt|kill|killed|start|started|set|break|broke|burn|burned|burnt)\b",
    r"i (?:never|didn'?t|did not|would never|wouldn'?t) (?:even )?(?:cheat|cheated|harm|harmed|hit|strike"
    r"|struck|attack|attacked|rob|robbed|pinch|pinched|lift|lifted|swipe|swiped|poison|poisoned|smash"
    r"|smashed|wreck|wrecked|threaten|threatened|lie|lied|spread)\b",
    r"(?:that'?s|that is|it'?s|it is|all|those are|that was|it was) (?:a |all |nothing but |just )?"
    r"(?:lies?|slander|false|untrue|not true|rubbish|nonsense|a rumou?r)\b",
    r"i'?m (?:no|not a) (?:thief|liar|murderer|cheat|killer|brawler|arsonist)",
    r"i was(?:n'?t| not) (?:even )?(?:there|near|in)",
    r"(?:someone|somebody) else (?:did|took|stole|started)",
    r"never laid a (?:hand|finger) on",
]
"""A player denying something said of them ("Wasn't me.", "I never stole that purse"):
when it answers a claim the NPC holds about them, the two compete as rival claims."""
