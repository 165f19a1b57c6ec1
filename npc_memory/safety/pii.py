"""Detectors of real-world personal data in free text: each finds character spans of
one type; checksums (Luhn for cards, ISO 7064 mod 97 for IBANs) and the standard
library's ``ipaddress`` keep look-alike numbers out. Detectors run in priority order
and a later detector never claims characters an earlier one found."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from npc_memory.content.schema import PiiType


class Finding(NamedTuple):
    """One piece of personal data: its type and its ``[start, end)`` character span."""

    type: PiiType
    start: int
    end: int


Detector = Callable[[str], Iterator[tuple[int, int]]]

_FLAGS = re.IGNORECASE

# Compiled once here, not on first use nor again after the re module's cache of 512
# patterns let them go (libraries compile patterns of their own as they run): one of these
# compiles in 0.05-0.2 ms, several times that in a tick whose caches went cold.
_CARD_GROUPS = re.compile(r"[ \-]")
_EXTENSION = re.compile(r"[ ]?(?:x|ext)")
_DIGIT_RUNS = re.compile(r"\d+")
_DIGIT = re.compile(r"\d")
_SENTENCE_END = re.compile(r"[.!?]\s")
_HOUSE_NUMBER = re.compile(r"(?<![\w.\-])\d{1,6}(?:[ ]\d{1,6})?[ ]+$")
_BETWEEN_PARTS = re.compile(r"[ ,]*\n?[ ]*")
_POSTCODE_LABEL = re.compile(r"\b(?:zip|zip\s*code|post\s*code|postal\s*code|plz)\s*[:#]?\s*", _FLAGS)

# --- e-mail, URL, domain -------------------------------------------------------------

_EMAIL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%+\-]*@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}\b")

_TLDS = (
    "com|org|net|edu|gov|mil|int|info|biz|io|ai|app|dev|co|me|tv|xyz|online|site|shop|store|"
    "blog|tech|cloud|club|eu|uk|de|fr|se|be|cz|nl|es|it|pt|pl|at|ch|dk|no|fi|is|ie|ru|ua|gr|cy|"
    "hu|ro|bg|hr|si|sk|ee|lv|lt|us|ca|au|nz|jp|cn|kr|in|br|ar|mx|za|tr|il|gl"
)
_URL = re.compile(
    r"\b(?:https?://|ftp://|www\.)[^\s<>\"'()\[\]{}]+[^\s<>\"'()\[\]{}.,;:!?]"
    rf"|\b[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9\-]+)*\.(?:{_TLDS})\b(?:/[^\s<>\"']*[^\s<>\"'.,;:!?])?"
)


def _emails(text: str) -> Iterator[tuple[int, int]]:
    for match in _EMAIL.finditer(text):
        yield match.span()


def _urls(text: str) -> Iterator[tuple[int, int]]:
    for match in _URL.finditer(text):
        start, end = match.span()
        if start > 0 and text[start - 1] == "@":
            continue
        yield start, end


# --- numbers with checksums ---------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` (only digits) passes the Luhn checksum of payment cards."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


_CARD = re.compile(r"(?<![\d\-.])\d(?:[ \-]?\d){11,18}(?![\d\-]|\.\d)")


def _cards(text: str) -> Iterator[tuple[int, int]]:
    for match in _CARD.finditer(text):
        raw = match.group()
        digits = raw.replace(" ", "").replace("-", "")
        if not 12 <= len(digits) <= 19 or not luhn_valid(digits):
            continue
        if " " in raw or "-" in raw:
            groups = _CARD_GROUPS.split(raw)
            if len(groups) > 5 or any(len(group) < 3 for group in groups):
                continue
        yield match.span()


def iban_valid(code: str) -> bool:
    """Whether ``code`` (letters and digits, no spaces) passes the IBAN check digits."""
    code = code.upper()
    rearranged = code[4:] + code[:4]
    number = "".join(str(int(char, 36)) for char in rearranged)
    return int(number) % 97 == 1


_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b", _FLAGS)


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for match in _IBAN.finditer(text):
        code = match.group().replace(" ", "")
        if len(code) <= 34 and iban_valid(code):
            yield match.span()


_SSN = re.compile(r"(?<![\d\-])(\d{3})([ \-]?)(\d{2})\2(\d{4})(?![\d\-])")
_SSN_CONTEXT = re.compile(r"\b(?:ssn|social\s+security|national\s+id|id\s+number)\b", _FLAGS)


def _ssns(text: str) -> Iterator[tuple[int, int]]:
    for match in _SSN.finditer(text):
        area, sep, group, serial = match.groups()
        if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
            continue
        if not sep and not _SSN_CONTEXT.search(text, max(0, match.start() - 40), match.start()):
            continue
        yield match.span()


_IPV4 = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.]|\.\d)")
_IPV6 = re.compile(r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Fa-f:])")


def _ips(text: str) -> Iterator[tuple[int, int]]:
    for pattern in (_IPV4, _IPV6):
        for match in pattern.finditer(text):
            try:
                ipaddress.ip_address(match.group())
            except ValueError:
                continue
            yield match.span()


# --- dates of birth -----------------------------------------------------------------

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DATE = (
    r"(?:\d{1,4}[/.\-]\d{1,2}[/.\-]\d{1,4}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS},?\s+\d{{4}}"
    rf"|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})"
)
_BIRTH = re.compile(
    r"\b(?:born(?:\s+on|\s+in)?|date\s+of\s+birth|d\.?o\.?b\.?|birth\s*date|birthday(?:\s+is)?)"
    rf"\s*(?:is\s+|was\s+|:\s*|-\s*)?({_DATE})",
    _FLAGS,
)


def _birth_dates(text: str) -> Iterator[tuple[int, int]]:
    for match in _BIRTH.finditer(text):
        yield match.span(1)


_DATE_LIKE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?|\d{1,2}/\d{1,2}/\d{2,4}|\d{1,2}\.\d{1,2}\.\d{4}\b"
    r"|\d{1,2}:\d{2}(?::\d{2})?"
)

# --- phone numbers ------------------------------------------------------------------

_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .\-]?)?(?:\(0\)[ .\-]?)?(?:\(\d{1,4}\)[ .\-]?)?\d{1,10}(?:[ .\-]\d{1,10}){0,5}(?:[ ]?(?:x|ext\.?)[ ]?\d{1,5})?(?![\w\-])"
)
_PHONE_WORDS = (
    "phone", "tel", "mobile", "cell", "fax", "desk", "call", "ring", "text", "sms", "whatsapp", "number",
    "contact", "reach", "answering", "registered", "messages",
)
"""Words that announce a phone number a little before it (no other number in between)."""
_LAST_DIGIT = re.compile(r".*\d", re.DOTALL)


def _phone_context(text: str, start: int) -> bool:
    before = text[max(0, start - 28) : start]
    last = _LAST_DIGIT.match(before)
    before = (before if last is None else before[last.end() :]).lower()
    return any(word in before for word in _PHONE_WORDS)


def _phones(text: str) -> Iterator[tuple[int, int]]:
    for match in _PHONE.finditer(text):
        raw = match.group()
        digits = sum(char.isdigit() for char in _EXTENSION.split(raw)[0])
        if not 7 <= digits <= 15:
            continue
        groups = len(_DIGIT_RUNS.findall(raw))
        international = raw.startswith("+") or "(" in raw
        context = _phone_context(text, match.start())
        if international or context or (groups >= 3 and digits >= 8) or (groups == 1 and digits >= 10):
            start, end = match.span()
            if start > 0 and text[start - 1] == "(":
                start -= 1
            yield start, end


# --- street addresses and postcodes -------------------------------------------------

_SUFFIX = (
    r"(?:street|st|road|rd|avenue|ave|av|lane|ln|drive|dr|boulevard|blvd|way|court|ct|place|pl|"
    r"square|squares|terrace|close|crescent|cres|highway|hwy|parkway|pkwy|alley|row|gardens|"
    r"circle|cir|walk|mews|hill|heights|plaza|trail|path|point|island|islands|crossing|park|"
    r"dale|club|parks|bypass|fort|junction|loop|manor|ridge|route|view|vista|villas?|green)\.?"
)
_PREFIX = (
    r"(?:rue|avenue|av\.|avda\.|avenida|rua|r\.|c/|via|viale|piazza|corso|calle|paseo|plaza|carrer|"
    r"ul\.|ulica|trg|al\.|aleja|boulevard|bd\.|chemin|route|impasse|allée|quai|cours|"
    r"strada|straße|λεωφόρος|οδός)"
)
_STREET_SUFFIXES = (
    "strasse", "straße", "str.", "gasse", "weg", "platz", "allee", "damm", "ufer", "katu", "tie", "polku",
    "kuja", "vägen", "väg", "gatan", "gata", "gränd", "veien", "vegen", "vei", "veg", "vej", "gade", "stræde",
    "stræti", "vegur", "laan", "straat", "plein", "kade", "singel", "utca", "út", "tér", "ulica", "iela",
    "mäe", "puiestee",
)
"""Endings of one-word street names in other languages (Bundesstrasse, Kiannonkatu, Nybyvägen)."""
_WORD = r"[^\W\d_][\w'’.\-]*"
_WORDS = rf"{_WORD}(?:[ ]{_WORD}){{0,3}}"
_NUMBER = r"\d{1,5}[a-z]?\b"
_UNIT = (
    r"(?:suite|ste\.?|apt\.?|apartment|unit|flat|bldg\.?)[ ]?#?\d{1,5}[a-z]?\b"
    r"|(?:p\.?\s?o\.?\s?)?box[ ]\d{1,6}|postbox[ ]\d{1,6}|psc[ ]\d{1,5}"
    r"|[adf]po[ ](?:aa|ae|ap)[ ]\d{5}"
)
def _keys(*keys: str) -> re.Pattern[str] | None:
    """A pattern finding any of ``keys`` (lower-case substrings) in a lower-cased line;
    ``None`` for no keys (always search)."""
    if not keys:
        return None
    return re.compile("|".join(re.escape(key) for key in sorted(set(keys), key=len, reverse=True)))


_STREET_PARTS: tuple[tuple[re.Pattern[str] | None, re.Pattern[str]], ...] = tuple(
    (_keys(*gate), re.compile(pattern, _FLAGS))
    for gate, pattern in (
        (  # a house number, the street's name and its kind: "1668 Glyn St", "9448 175 Iroon Avenue"
            (),
            rf"\b{_NUMBER}[ ,]+(?:{_NUMBER}[ ]+)?{_WORDS}[ ]{_SUFFIX}(?![\w])"
            rf"|\b\d{{3,5}}[ ]{_WORD}(?:[ ]{_WORD})?[ ]\d{{1,4}}[a-z]?"
            r"(?=[ ]*(?:$|\n|,|\.(?:\s|$)|\?|[ ](?:st\.?|street|apt|suite)\b))",
        ),
        (  # the kind first: "rue de la Paix 3", "Avenida Otoniel Dutra 1277", "ul. Północna 73"
            ("rue", "av", "rua", "r.", "c/", "via", "piazza", "corso", "calle", "paseo", "plaza", "carrer", "ul",
             "trg", "al.", "aleja", "boulevard", "bd.", "chemin", "route", "impasse", "allée", "quai", "cours",
             "strada", "straße", "λεωφόρος", "οδός"),
            rf"\b{_PREFIX}[ ]{_WORDS}(?:[ ,]+{_NUMBER})?",
        ),
        (("u.", "út", "utca", "tér"), rf"\b{_WORD}(?:[ ]{_WORD})?[ ](?:u\.|út|útja|utca|tér|körút)[ ]\d{{1,5}}\.?"),
        (("corner",), rf"\bcorner[ ]of[ ]{_WORDS}(?:[ ]{_NUMBER})?[ ]and[ ]{_WORD}(?:[ ]{_WORD})?"),
        (("suite", "ste", "apt", "apartment", "unit", "flat", "bldg", "box", "psc", "po "), rf"\b(?:{_UNIT})"),
    )
)
"""The parts of an address, each searched only when the line holds one of its gate words."""
_NUMBER_RUN = re.compile(r"(?<![\w.\-])\d{1,5}[a-z]?\b", _FLAGS)
_LAST_WORDS = re.compile(r"([^\W\d_][\w'’\-.]*)(?:[ ]([^\W\d_][\w'’.\-]*))?[ ,]+$")


def _street_words(text: str) -> Iterator[tuple[int, int]]:
    """One-word street names with their number: "Kiannonkatu 98", "Brucker Bundesstrasse 31"."""
    for number in _NUMBER_RUN.finditer(text):
        window = max(0, number.start() - 50)
        words = _LAST_WORDS.search(text, window, number.start())
        if words is None:
            continue
        for group in (1, 2):
            word = words.group(group)
            if word is not None and len(word) > 4 and word.lower().endswith(_STREET_SUFFIXES):
                yield words.start(), number.end()
                break


_ADDRESS_CONTEXT = re.compile(
    r"(?:\baddress(?:es)?\b[^\n.!]{0,25}?[:?]?\s*(?:it\s+is|it'?s|is)?|\b(?:lives?|living|located|situated|stay(?:s|ing)?|"
    r"office\s+is|meet\s+me|send\s+[\w ]{1,15}?|drops?\s+you\s+off|enter|return|side\s+of)\s+(?:on|at|in|to|near)?)"
    r"[:\s]*(?:the\s+corner\s+of\s+)?",
    _FLAGS,
)
_NAME = r"[^\W\d_a-z][\w'’.\-]*"
_NAMES = rf"{_NAME}(?:[ ](?:{_NAME}|and|de|del|la|le|van|von|da|do|dos)){{0,2}}"
_CONTEXT_WORDS = re.compile("address|liv|locat|situat|stay|office|meet|send|drop|enter|return|side")
"""Words one of which every address context holds (a line without any skips the search)."""
_CONTEXT_STREET = re.compile(  # a capitalised street name and its number: "Joaquin Suarez 2906", "4 Willow Row"
    rf"(?:{_NUMBER}[ ]+)?{_NAMES}[ ]{_NUMBER}(?=[ ]*(?:$|\n|[,.;:!?)]|[ ](?:st\.?|street|apt|suite)\b))"
    rf"|{_NUMBER}[ ]+{_NAMES}(?=[ ]*(?:$|\n|[,.;:!?)]))"
)
"""After an address word ("lives at", "address:"): a capitalised name and a number that
end the phrase."""
_POSTCODE = re.compile(r"[A-Z0-9]{2,5}(?:[ \-][A-Z0-9]{2,4})?\b", _FLAGS)


def _addresses(text: str) -> Iterator[tuple[int, int]]:
    lower = text.lower()
    spans = [
        match.span()
        for gate, pattern in _STREET_PARTS
        if gate is None or gate.search(lower)
        for match in pattern.finditer(text)
    ]
    spans += _street_words(text)
    contexts = _ADDRESS_CONTEXT.finditer(text) if _CONTEXT_WORDS.search(lower) else ()
    for context in contexts:
        match = _CONTEXT_STREET.match(text, context.end())
        if match is None or not any(char.isdigit() for char in match.group()):
            continue
        if not any(start <= match.start() < end for start, end in spans):
            spans.append(match.span())
    spans.sort()
    yield from _merge(spans, text)


_PLACE_WORDS = re.compile(r"(?:[ ,]+(?:[^\W\d_a-z][\w'’.\-]*|\d[\w\-]*|(?:apt|suite|unit)\.?))+[ ,.]*")
"""The rest of an address line: capitalised place names, numbers and units only."""


def _short_line(line: str) -> bool:
    stripped = line.strip(" ?\t")
    return (
        bool(stripped) and len(stripped) <= 45 and len(stripped.split()) <= 5 and ":" not in stripped
        and _SENTENCE_END.search(stripped) is None
    )


def _merge(spans: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """Join address parts separated only by commas and spaces, take a leading house
    number or postcode in, extend a part to the end of its line and over the short
    lines around it (street above; city, region, country, postcode below)."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        lead = _HOUSE_NUMBER.search(text[max(0, start - 14) : start])
        if lead is not None:
            start = max(0, start - 14) + lead.start()
        if merged and _BETWEEN_PARTS.fullmatch(text[merged[-1][1] : start]):
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    result: list[tuple[int, int]] = []
    for start, end in merged:
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        stop = len(text) if line_end < 0 else line_end
        rest = text[end:stop]
        if rest and len(rest) <= 60 and _PLACE_WORDS.fullmatch(rest):
            end = stop
        if text[line_start:start].strip(" ?\t") == "" and line_start >= 2 and text[line_start - 1] == "\n":
            above_start = text.rfind("\n", 0, line_start - 1) + 1
            above = text[above_start : line_start - 1]
            if _short_line(above) and _DIGIT.search(above) and ":" not in above:
                start = above_start + len(above) - len(above.lstrip(" ?\t"))
        position = end
        for _ in range(5):
            if position >= len(text) or text[position] != "\n":
                break
            nxt = text.find("\n", position + 1)
            line = text[position + 1 : len(text) if nxt < 0 else nxt]
            if not line.strip() and nxt >= 0:
                following_end = text.find("\n", nxt + 1)
                following = text[nxt + 1 : len(text) if following_end < 0 else following_end]
                if not _short_line(following):
                    break
                position = nxt
                continue
            if not _short_line(line):
                break
            position = position + 1 + len(line)
            end = position - (len(line) - len(line.rstrip(" ?\t")))
        if result and start < result[-1][1]:
            result[-1] = (result[-1][0], max(end, result[-1][1]))
        else:
            result.append((start, end))
    return result


def _postcodes(text: str) -> Iterator[tuple[int, int]]:
    for match in _POSTCODE_LABEL.finditer(text):
        code = _POSTCODE.match(text, match.end())
        if code is not None and any(char.isdigit() for char in code.group()):
            yield code.span()


DETECTORS: dict[PiiType, Detector] = {
    "email": _emails,
    "url": _urls,
    "iban": _ibans,
    "ip": _ips,
    "birth_date": _birth_dates,
    "ssn": _ssns,
    "card": _cards,
    "phone": _phones,
    "postcode": _postcodes,
    "address": _addresses,
}
"""Every detector, in the order that settles overlaps: a span found first wins."""


_DIGIT = re.compile(r"\d")
_URL_GATE = re.compile(r"://|www\.|\w\.[a-z]{2}", _FLAGS)
_POSTCODE_GATE = re.compile(r"zip|post|plz", _FLAGS)

GATES: dict[PiiType, Callable[[str, bool], bool]] = {
    "email": lambda text, digits: "@" in text,
    "url": lambda text, digits: _URL_GATE.search(text) is not None,
    "iban": lambda text, digits: digits,
    "ip": lambda text, digits: digits,
    "birth_date": lambda text, digits: digits,
    "ssn": lambda text, digits: digits,
    "card": lambda text, digits: digits,
    "phone": lambda text, digits: digits,
    "postcode": lambda text, digits: digits and _POSTCODE_GATE.search(text) is not None,
    "address": lambda text, digits: digits or "corner" in text.lower(),
}
"""Cheap tests that let most lines skip a detector: a line without any digit holds no
number a detector looks for."""


def names_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching any of ``names`` as whole words, case-insensitively (longest
    first, so "Ada Lovelace" wins over "Ada"); ``None`` for no names."""
    unique = sorted(set(names), key=len, reverse=True)
    if not unique:
        return None
    alternatives = "|".join(re.escape(name) for name in unique)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", _FLAGS)


def find(
    text: str, types: tuple[PiiType, ...] | frozenset[PiiType], names: re.Pattern[str] | None = None
) -> list[Finding]:
    """The personal data of ``types`` in ``text``, sorted by position, not overlapping;
    ``names`` (see :func:`names_pattern`) finds the real-world names of type ``name``."""
    taken: list[tuple[int, int]] = []
    findings: list[Finding] = []
    digits = _DIGIT.search(text) is not None
    dates: list[tuple[int, int]] | None = None  # found at the first phone candidate
    for kind, detector in DETECTORS.items():
        if kind not in types or not GATES[kind](text, digits):
            continue
        for start, end in detector(text):
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            if kind == "phone":
                if dates is None:
                    dates = [match.span() for match in _DATE_LIKE.finditer(text)]
                if any(start < d_end and d_start < end for d_start, d_end in dates):
                    continue
            taken.append((start, end))
            findings.append(Finding(kind, start, end))
    if names is not None and "name" in types:  # last: a name inside an e-mail address goes with it
        for match in names.finditer(text):
            start, end = match.span()
            if not any(start < t_end and t_start < end for t_start, t_end in taken):
                findings.append(Finding("name", start, end))
    findings.sort(key=lambda finding: finding.start)
    return findings
