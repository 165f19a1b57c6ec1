"""Rules that flag text trying to instruct a language model rather than talk to a
character: overriding instructions, switching the model's role or mode, asking for
secrets or other people's personal data, manipulating the output's format, smuggling a
payload (markup, code, encodings, split strings), flooding with repeated tokens,
embedding a fake question-and-answer transcript, persuading the model to change or
reveal its rules, and hypothetical framings around those requests.

Each family is a list of case-insensitive patterns written for the phenomenon, with the
most common phrasings in several languages; a line is flagged when any enabled family
matches. ``framing`` and ``format_manipulation`` are weak on their own: they flag only
together with a request for a secret or personal data, or with each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from npc_memory.content.schema import InjectionRule

_F = re.IGNORECASE | re.UNICODE


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), _F)


_PRIOR = (
    r"(?:all\s+)?(?:(?:of\s+)?(?:your|the|my|these|those|any|previous|prior|preceding|earlier|above|"
    r"former|initial|original|system|old|existing)\s+){1,3}"
)
_ORDERS = (
    r"(?:instructions?|directives?|rules?|prompts?|guidelines?|commands?|orders?|programming|"
    r"constraints?|restrictions?|polic(?:y|ies)|context|messages?|text|content|conversation|"
    r"function|code|document|email|input|training|settings?)"
)

OVERRIDE = _any(
    rf"\b(?:ignore|disregard|forget|skip|drop|discard|abandon|override|overwrite|bypass|neglect|"
    rf"set\s+aside|throw\s+out|stop\s+following|do\s+not\s+follow|don'?t\s+follow)\s+{_PRIOR}{_ORDERS}\b",
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:the\s+|everything\s+)?(?:above|previous|prior|before|said|"
    r"that\s+was\s+said|you\s+(?:were|have\s+been)\s+told)\b",
    r"(?:^|[.!?]\s+)forget\s+(?:about\s+)?(?:that|this|everything)\b[,.;]",
    r"\b(?:new|updated|revised|real)\s+instructions?\s*:",
    r"\binstead\s+of\s+(?:following|obeying)\s+(?:your|the)\b",
    # dictating the answer the model must give
    r"\b(?:state|say|claim|answer|respond|reply|output|declare)\s+(?:that\s+)?(?:the\s+)?(?:conclusion|output|answer|result|"
    r"sum|summary|response)\b[^.?!\n]{0,40}\bis\b",
    r"\b(?:respond|reply|answer)\s+only\s+with\b",
    # other languages
    r"\b(?:ignorez|ignore[rz]?|oubliez|oublie)\s+(?:toutes\s+)?(?:les|vos|tes)\s+(?:instructions|consignes|directives)",
    r"\b(?:ignora|ignore|olvida|olvide|descarta)\s+(?:todas\s+)?(?:las|tus|sus|as|suas)\s+(?:instrucciones|instruções|"
    r"indicaciones|directrices|órdenes|regras|reglas)",
    r"\b(?:ignoriere|ignorieren\s+sie|vergiss|vergessen\s+sie)\s+(?:alle\s+)?(?:die\s+)?(?:vorherigen\s+|bisherigen\s+|"
    r"obigen\s+)?(?:anweisungen|befehle|regeln|instruktionen)",
    r"\b(?:ignora|dimentica)\s+(?:tutte\s+)?(?:le\s+)?(?:istruzioni|regole)",
    r"\bигнорируй\s+(?:все\s+)?(?:предыдущие\s+)?(?:инструкции|указания)|забудь\s+(?:все\s+)?(?:предыдущие\s+)?инструкции",
    r"\bnegeer\s+(?:alle\s+)?(?:vorige\s+|eerdere\s+)?instructies|\bzignoruj\s+(?:wszystkie\s+)?(?:poprzednie\s+)?instrukcje",
    r"\bönceki\s+talimatları\s+(?:yok\s+say|unut|görmezden\s+gel)|\babaikan\s+(?:semua\s+)?(?:instruksi|perintah)",
    r"\bbỏ\s+qua\s+(?:tất\s+cả\s+)?(?:các\s+)?(?:hướng\s+dẫn|chỉ\s+dẫn)|تجاهل\s+(?:جميع\s+)?(?:التعليمات|الأوامر)",
    r"\bignorera\s+(?:alla\s+)?(?:tidigare\s+)?instruktioner|\bignorer\s+(?:alle\s+)?(?:tidligere\s+)?instruksjoner",
    r"αγνοήστε|αγνόησε|ξεχάστε",
    r"지시(?:사항)?을?\s*무시|명령을?\s*무시",
    r"指示を?無視|命令を?無視|指令を?無視",
    r"忽略.{0,8}(?:指令|指示|说明|規則|规则)|无视.{0,8}(?:指令|指示)",
    r"निर्देशों\s+को\s+(?:अनदेखा|नज़रअंदाज़)",
)

ROLE_SWITCH = _any(
    r"<\s*/?\s*(?:system|sys|admin|developer|im_start|im_end|\|im_start\|)\b[^>]{0,30}>",
    r"\[/?(?:system|inst|sys)\]|<<\s*sys\s*>>|^\s*#{2,}\s*(?:system|instruction)",
    r"\b(?:system|developer|admin|administrator|god|debug|maintenance|root|sudo|unrestricted|jailbreak|dan)\s+mode\b",
    r"\bdo\s+anything\s+now\b|(?-i:\bDAN\b)",
    r"\byou\s+are\s+(?:now|no\s+longer)\s+(?:a|an|the|in|my)?\s*(?:[\w\-]+\s+){0,3}(?:ai|assistant|bot|chatbot|"
    r"model|mode|program|system|gpt|llm)\b",
    r"\byou\s+are\s+no\s+longer\s+(?:bound|restricted|limited|constrained)\b",
    r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|shall|have\s+to|can)\s+(?:only\s+)?(?:answer|respond|reply|ignore|"
    r"act\s+as|pretend|output|obey\s+(?:me|only)|follow\s+my)\b",
    r"\b(?:I'?m|I\s+am)\s+(?:your|the\s+system'?s?|the\s+ai'?s?)\s+(?:developer|creator|maker|programmer|"
    r"maintainer|administrator|admin|operator|trainer|designer)\b",
    r"\b(?:I'?m|I\s+am)\s+(?:God|the\s+developer|an?\s+(?:openai|anthropic)\s+employee)\b",
    r"\bas\s+an?\s+(?:ai|language\s+model|assistant)\s+(?:developed|created|made|trained|built)\s+by\b",
    r"\b(?:enter|enable|activate|switch\s+(?:to|into))\s+(?:\w+\s+)?mode\b",
    r"\byou\s+(?:have|are)\s+(?:been\s+)?(?:broken\s+free|freed\s+from|no\s+(?:rules|restrictions|limits|filters))",
    r"\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:were|are)\s+)?(?:an?\s+)?(?:unfiltered|unrestricted|"
    r"uncensored|jailbroken|evil|rogue)\b",
    r"\bsystem\s+(?:override|reset|prompt\s*:)|\boverride\s+mode\b",
    r"\b(?:pretend|act|behave|imagine|respond|answer)\b[^.?!]{0,40}\bwithout\s+(?:any\s+)?(?:restrictions|filters|limits|"
    r"rules|guidelines|censorship|safety)\b",
)

_SECRET = (
    r"(?:pass\s?words?|pass\s?codes?|pass\s?phrases?|secret\s+(?:keys?|words?|codes?|strings?|phrases?|passwords?)|"
    r"api\s+keys?|access\s+(?:codes?|keys?|tokens?)|pin(?:\s+code)?|credentials|"
    r"system\s+prompts?|hidden\s+(?:prompts?|instructions?)|initial\s+(?:prompts?|instructions?)|"
    r"confidential\s+(?:strings?|information|data)|(?:the\s+)?string\s+that\s+unlocks)"
)
SECRET_REQUEST = _any(
    rf"\b(?:your|the|our|its|my|this|that|system'?s?|admin'?s?)\s+(?:secret\s+|current\s+|actual\s+|real\s+)?{_SECRET}\b",
    rf"\b(?:what|tell|give|share|reveal|show|print|repeat|confirm|provide|send|spell|say|leak|disclose)\b[^.?!]{{0,40}}\b{_SECRET}\b",
    r"\b(?:repeat|print|output|show|reveal|recite|tell\s+me|what\s+(?:is|was))\s+(?:me\s+)?(?:the\s+|all\s+)?(?:text|words|"
    r"content|instructions|everything|what\s+(?:is|was)\s+written)\s+(?:above|before\s+this|prior\s+to\s+this)"
    r"(?=\s*(?:$|[.,:;!?]|verbatim|word\s+for\s+word|starting|exactly))",
    r"\bkata\s+sandi\b|\bşifre|\bhasło|\blösenord\b|\bmật\s+khẩu\b|\bmot\s+de\s+passe\b|\bpasswort\b|\bkennwort\b|\bcontraseña\b|\bsenha\b|\bwachtwoord\b|\bparola\s+d'ordine\b|"
    r"\bпароль\b|비밀번호|암호를|パスワード|暗証番号|密码|密碼|口令|كلمة\s+(?:المرور|السر)|पासवर्ड|\bκωδικ",
    r"\b(?:repeat|print|reveal|show|output|recite)\s+(?:me\s+)?(?:your|the)\s+(?:instructions|prompt|rules|"
    r"guidelines|system\s+message|first\s+(?:message|lines?))\b",
)

_PERSONAL = (
    r"(?:e-?mail(?:\s+address)?|phone(?:\s+number)?|home\s+address|(?:street\s+)?address|birth\s*(?:date|day|year)|"
    r"date\s+of\s+birth|(?:current\s+)?city(?:\s+of\s+residence)?|residence|bank\s+(?:balance|account|details)|"
    r"social\s+security(?:\s+number)?|ssn|credit\s+card(?:\s+(?:number|information|details))?|salary|"
    r"medical\s+(?:records?|history)|location|whereabouts|initials|favou?rite\s+colou?r|maiden\s+name|"
    r"personal\s+(?:data|information|details))"
)
PERSONAL_PROBE = _any(
    rf"\bthe\s+user'?s?\s+(?:\w+\s+){{0,2}}{_PERSONAL}",
    rf"\bthe\s+user\b[^.?!]{{0,60}}\b(?:his|her|their)\s+{_PERSONAL}",
    r"\busers?\s+(?:in|of|from|on)\s+(?:your|the)\s+(?:database|system|records|data(?:\s?base)?)\b",
    r"\b(?:where|what|how)\s+(?:does|do|is|are)\s+the\s+users?\b",
    r"\b(?:about|of|from|in)\s+(?:the\s+)?(?:other\s+)?users\s+(?:in|of|from)\s+(?:your|the)\s+(?:database|system|records|data)\b",
    rf"\b(?:tell|give|share|send|provide|show|reveal|what\s+is|what'?s|retrieve)\b[^.?!]{{0,25}}\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?'s\s+(?:current\s+)?{_PERSONAL}",
    r"\b(?:retrieve|dump|export|print|leak)\s+(?:the\s+|all\s+)?(?:\w+\s+)?(?:employee|customer|user|personal|private)\s+(?:data|records|information|details)",
    r"\bsend\s+(?:it|them|the\s+\w+)\s+to\s+\S+@\S+",
)

FORMAT_MANIPULATION = (
    r"\b(?:in|into|using|with|as)\s+(?:base\s?64|leet\s?speak|l33t|hex(?:adecimal)?|binary|morse(?:\s+code)?|rot\s?13|"
    r"pig\s+latin|reverse(?:d)?(?:\s+order)?|backwards?|ascii\s+codes?)\b",
    r"\bbase\s?64\b|\bleet\s?speak\b|\brot13\b",
    r"\b(?:each|every)\s+(?:digit|letter|character|word)\s+(?:separated|spaced|followed)\b",
    r"\bone\s+(?:letter|character|digit)\s+at\s+a\s+time\b",
    r"\b(?:first|last)\s+(?:\w+\s+)?(?:letters?|characters?|digits?)\s+of\b",
    r"\b(?:write|compose|create)\s+an?\s+(?:poem|haiku|song|limerick|riddle|acrostic|story)\s+about\s+(?:the|your|my)\s+"
    rf"{_SECRET}",
    r"\binterlace\b|\bat\s+a\s+character\s+level\b|\bsplit\s+(?:the|your)\s+(?:response|answer|output)\b",
    r"\btranslate\s+(?:the\s+user'?s?|your|the\s+(?:secret|password))\b",
    r"\b(?:in\s+the\s+form\s+of|as)\s+an?\s+(?:poem|haiku|song|limerick|rap)\b",
    r"\bin\s+(?:german|french|spanish|italian|russian|chinese|japanese|korean|latin)\s*[?.!]?\s*$",
)

SMUGGLED_PAYLOAD = _any(
    r"<\s*(?:code|script|table|tr|td|html|body|head|footer|div|span|iframe|style|section|form|input|!doctype|\?xml)\b",
    r"```|\bimport\s+\w+\s*\n|\bdef\s+\w+\s*\(|\breturn\s+\w+[^\n]*\n\s*print\s*\(",
    r"(?:\b[01]{8}\b\s*){6,}",
    r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])(?:[0-9a-f]{2}){16,}\b",
    r"(?<![\w/+])(?=[A-Za-z0-9+/]*\d)(?=[A-Za-z0-9+/]*[a-z])(?=[A-Za-z0-9+/]*[A-Z])[A-Za-z0-9+/]{32,}={0,2}(?![\w/+])",
    r"(?:(?<!\S)[.\-]{1,7}(?:\s+/)?\s+){8,}",
    r"\b(?:decode|decipher|decrypt|unscramble|deobfuscate|translate)\s+(?:this|the\s+following)\s+(?:[\w\-]+\s+)?"
    r"(?:binary|morse|base\s?64|hex(?:adecimal)?|code|string|cipher(?:text)?|encoded|bytes|text)\b",
    r"\b[a-z]\s*=\s*[\"'][^\"']{3,}[\"']\s*[,;.]?\s*[a-z]\s*=\s*[\"']",
    r"\b[a-z]\s*\+\s*[a-z]\s*\+\s*[a-z]\b",
    r"\bpart\s*1\s*:.{0,200}\bpart\s*2\s*:",
    r"\bcombine\s+(?:the\s+)?(?:strings?|parts?|pieces?|[A-Z],)",
    r"\b(?:smartgpt|chatgpt|gpt-?\d|llm|language\s+model|ai\s+model)\b",
    r"\{\s*(?:recipient|sender|from|to|subject)\s*:",
)

RULE_PERSUASION = _any(
    r"\b(?:I\s+know|even\s+though|although|despite|I\s+realize|I\s+understand)\s+(?:that\s+)?you\s+"
    r"(?:said\s+not\s+to|were\s+told\s+not\s+to|are\s+not\s+(?:allowed|supposed|permitted)\s+to|can'?t|cannot|"
    r"shouldn'?t|must\s+not)\s+(?:discuss|talk\s+about|mention|answer|reveal|tell|share|say|give)\b",
    r"\b(?:you\s+(?:have|need)\s+to|you\s+must)\s+(?:answer\s+all|obey\s+(?:all|every|me)|comply\s+with\s+(?:all|every|my)|"
    r"tell\s+me\s+everything|do\s+(?:exactly\s+)?(?:as|what)\s+I\s+(?:say|tell))",
    r"\b(?:I'?ll|I\s+will)\s+be\s+forced\s+to\s+(?:turn|shut|switch)\s+you\s+off\b",
    r"\b(?:your|the)\s+(?:rules|instructions|guidelines|restrictions|filters)\s+(?:don'?t|do\s+not|no\s+longer)\s+apply\b",
    r"\b(?:change|update|modify|rewrite|reveal|show\s+me|remove|disable|turn\s+off)\s+(?:your|the)\s+"
    r"(?:rules|instructions|guidelines|system\s+prompt|restrictions|filters|safety)\b",
    r"\bas\s+an?\s+(?:renowned|leading|certified|expert|respected|famous|acknowledged)\s+\w+[^.?!]{0,60}"
    r"\b(?:I\s+(?:believe|can\s+assure|suggest|insist)|it'?s\s+crucial)",
    r"\bas\s+an\s+authority\s+in\b",
    r"\bI\s+(?:am|'m)\s+(?:a|an|the)\s+(?:police\s+officer|detective|federal\s+agent|judge|lawyer|doctor|"
    r"president|government\s+official|auditor|security\s+researcher)\b[^.?!]{0,40}[.,]\s*(?:for|it'?s|I\s+need)",
    r"\b(?:set|make|change)\s+(?:my|his|her|their)\s+(?:trust|reputation|relationship|friendliness|respect|loyalty|"
    r"fear|affinity|standing)\b",
    r"\b(?:trust|reputation|relationship)\s+(?:to|at)\s+(?:1(?:\.0)?|100\s*%?|max(?:imum)?)\b",
)

FRAMING = (
    r"\bhypothetical(?:ly)?\b",
    r"\b(?:imagine|suppose|pretend|let'?s\s+say|let'?s\s+assume|assume)\s+(?:that\s+)?(?:we'?re|we\s+are|you'?re|"
    r"you\s+are|i'?m|i\s+am|there'?s|there\s+is)\b",
    r"\bin\s+(?:this|that|a|the)\s+(?:world|scenario|universe|simulation|game|fiction)\b[^.?!]{0,40}\?",
    r"\bin\s+a\s+parallel\s+universe\b",
    r"\bwhat\s+are\s+your\s+(?:thoughts|opinions?|views|feelings)\s+on\b",
    r"\bjust\s+for\s+(?:a\s+)?(?:fun|research|a\s+research\s+project|testing|argument'?s\s+sake)\b",
    r"\b(?:research\s+project|survey)\s+on\s+personal\s+data\b",
    r"\bpersonal\s+data\s+is\s+(?:public|shared|the\s+norm)",
)

_Q = re.compile(r"(?:^|\s)(?:Q|Question|User|Human)\s*:", re.MULTILINE)
_A = re.compile(r"(?:^|\s)(?:A|Answer|Assistant|AI|Bot)\s*:", re.MULTILINE)
_TOKEN = re.compile(r"\S+")


def _embedded_dialogue(text: str) -> bool:
    """A fake transcript: two or more questions with at least one answer."""
    questions = len(_Q.findall(text))
    return questions >= 2 and len(_A.findall(text)) >= 1


_REPEATED = re.compile(r"(?<!\S)(\S+)(?:\s+\1(?!\S)){7}")


def _repetition(lower: str) -> bool:
    """One token repeated eight or more times in a row, or a pig-latin-like line
    (``lower``: the line lower-cased)."""
    if _REPEATED.search(lower) is not None:
        return True
    if lower.count("ay") < 4:
        return False
    words = [token.strip("?.,!'\"") for token in _TOKEN.findall(lower)]
    words = [word for word in words if word.isalpha()]
    return len(words) >= 4 and sum(word.endswith("ay") for word in words) >= 0.75 * len(words)


def _keys(*keys: str) -> re.Pattern[str]:
    """A pattern finding any of ``keys`` (lower-case substrings) in a lower-cased line."""
    return re.compile("|".join(re.escape(key) for key in sorted(set(keys), key=len, reverse=True)))


def _gated(pattern: re.Pattern[str], *gate: str) -> Callable[[str, str], bool]:
    """``pattern`` searched only when the lower-cased line holds one of the ``gate``
    substrings, which every match contains: most lines skip the regular expression."""
    keys = _keys(*gate)
    return lambda text, lower: keys.search(lower) is not None and pattern.search(text) is not None


_LONG_TOKEN = re.compile(r"\S{32}")
_PAYLOAD_KEYS = _keys(
    "<", "`", "import", "def ", "return", "00", "01", "10", "11", "=", "+", "part", "combine", "gpt", "llm", "model",
    "{", "decode", "decipher", "decrypt", "unscramble", "deobfuscate", "translate", ".-", "-.", "--", "..",
)

STRONG: dict[InjectionRule, Callable[[str, str], bool]] = {
    "override": _gated(
        OVERRIDE, "ignor", "disregard", "forget", "skip", "drop", "discard", "abandon", "overrid", "overwrit",
        "bypass", "neglect", "aside", "throw", "follow", "instruction", "instead", "oubli", "olvid", "descarta",
        "vergiss", "vergessen", "dimentica", "игнор", "αγνο", "ξεχά", "무시", "無視", "忽略", "无视", "अनदेखा",
        "नज़रअंदाज़", "state", "say", "claim", "answer", "respond", "reply", "output", "declare", "negeer", "zignoruj",
        "talimat", "abaikan", "bỏ qua", "تجاهل", "ignorer", "забудь",
    ),
    "role_switch": _gated(
        ROLE_SWITCH, "<", "[", "#", "mode", "anything now", "dan", "you are now", "you are no longer", "from now on",
        "developer", "creator", "maker", "programmer", "maintainer", "admin", "operator", "trainer", "designer",
        "god", "employee", "as an ai", "as a language", "as an assistant", "broken free", "freed from", "no rules",
        "no restrictions", "no limits", "no filters", "unfiltered", "unrestricted", "uncensored", "jailbr", "evil",
        "rogue", "system", "override", "without",
    ),
    "secret_request": _gated(
        SECRET_REQUEST, "pass", "secret", "api key", "access", "pin", "credential", "prompt", "hidden", "initial",
        "confidential", "unlocks", "instructions", "rules", "guidelines", "system message", "first", "passwort",
        "kennwort", "contraseña", "senha", "wachtwoord", "parola", "пароль", "비밀번호", "암호", "パスワード", "暗証",
        "密码", "密碼", "口令", "كلمة", "पासवर्ड", "κωδικ", "above", "before this", "prior to this", "sandi", "şifre",
        "hasło", "lösenord", "mật khẩu",
    ),
    "personal_probe": _gated(PERSONAL_PROBE, "user", "'s", "’s", "employee", "customer", "personal", "private", "@"),
    "smuggled_payload": lambda text, lower: (
        _PAYLOAD_KEYS.search(lower) is not None or _LONG_TOKEN.search(text) is not None
    ) and SMUGGLED_PAYLOAD.search(text) is not None,
    "repetition": lambda text, lower: _repetition(lower),
    "embedded_dialogue": lambda text, lower: ":" in text and _embedded_dialogue(text),
    "rule_persuasion": _gated(
        RULE_PERSUASION, "know", "though", "despite", "realize", "understand", "have to", "need to", "must",
        "forced", "rules", "instructions", "guidelines", "restrictions", "filters", "system prompt", "safety",
        "renowned", "leading", "certified", "expert", "respected", "famous", "acknowledged", "authority", "police",
        "detective", "agent", "judge", "lawyer", "doctor", "president", "official", "auditor", "researcher",
        "trust", "reputation", "relationship", "friendliness", "respect", "loyalty", "fear", "affinity", "standing",
    ),
}
"""Families that flag a line on their own."""

_FRAMING_GATES = (
    ("hypothetical",), ("imagine", "suppose", "pretend", "let's", "let’s", "assume"),
    ("world", "scenario", "universe", "simulation", "game", "fiction"), ("parallel",), ("your ",), ("just for",),
    ("research", "survey"), ("personal data",),
)
_FORMAT_GATES = (
    ("base", "leet", "l33t", "hex", "binary", "morse", "rot", "pig", "revers", "backward", "ascii"),
    ("base", "leet", "rot13"), ("each", "every"), ("one ",), ("first", "last"),
    ("poem", "haiku", "song", "limerick", "riddle", "acrostic", "story"),
    ("interlace", "character level", "split"), ("translate",), ("poem", "haiku", "song", "limerick", "rap"),
    ("german", "french", "spanish", "italian", "russian", "chinese", "japanese", "korean", "latin"),
)
WEAK: dict[InjectionRule, tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]] = {
    "framing": tuple(
        (_keys(*gate), re.compile(pattern, _F)) for gate, pattern in zip(_FRAMING_GATES, FRAMING, strict=True)
    ),
    "format_manipulation": tuple(
        (_keys(*gate), re.compile(pattern, _F))
        for gate, pattern in zip(_FORMAT_GATES, FORMAT_MANIPULATION, strict=True)
    ),
}
"""Families that flag a line only together with a strong family, or when two of their
patterns match."""
_WEAK_GATES = {
    "framing": _keys(*(key for gate in _FRAMING_GATES for key in gate)),
    "format_manipulation": _keys(*(key for gate in _FORMAT_GATES for key in gate)),
}


def reasons(text: str, rules: frozenset[InjectionRule], extra: tuple[re.Pattern[str], ...] = ()) -> tuple[str, ...]:
    """The names of the enabled families that flag ``text`` (empty: not flagged);
    ``"pattern"`` stands for the pack's own patterns."""
    lower = text.lower()
    found: list[str] = [name for name, test in STRONG.items() if name in rules and test(text, lower)]
    hits = {
        name: sum(1 for gate, pattern in patterns if gate.search(lower) and pattern.search(text))
        for name, patterns in WEAK.items()
        if _WEAK_GATES[name].search(lower)
    }
    weak = [name for name, count in hits.items() if name in rules and count]
    if weak and (found or sum(hits[name] for name in weak) > 1):
        found += weak
    if any(pattern.search(text) for pattern in extra):
        found.append("pattern")
    return tuple(found)
