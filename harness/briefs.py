"""Seeded short newswire briefs in English and Chinese, and labelled pairs for the quality bench.

Short templated items are where a character edit similarity cannot tell a copy from another
story. Pairs: ``copy`` (surface noise only, never touching a fact: :func:`numerals`),
``sibling`` (exactly one fact changed) and ``unrelated``. One ``random.Random(seed)``.
"""

from __future__ import annotations

import itertools
import random
import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypedDict

from harness.data import templates

__all__ = [
    "ENTITIES",
    "KINDS",
    "LANGS",
    "TEMPLATES",
    "Brief",
    "BriefDoc",
    "Pair",
    "PairKind",
    "generate",
    "has_numeral",
    "numerals",
    "render",
    "slot_kinds",
]

Lang = Literal["en", "zh"]
PairKind = Literal["copy", "sibling", "unrelated"]
SlotKind = Literal["entity", "number", "date"]
LANGS: tuple[Lang, ...] = ("en", "zh")
KINDS: tuple[PairKind, ...] = ("copy", "sibling", "unrelated")


class BriefDoc(TypedDict):
    id: str
    text: str
    lang: str


class Pair(NamedTuple):
    """``first`` is earlier than ``second`` in the stream; ``detail`` says which noise or fact."""

    first: str
    second: str
    kind: PairKind
    detail: str


@dataclass(frozen=True)
class Brief:
    """One rendered brief: its template, the fact filled into each slot, and the text."""

    template: int
    facts: tuple[str, ...]
    text: str


# --------------------------------------------------------------------------- vocabulary

_WORDS = templates("briefs")
_EN_FUND_HEAD: list[str] = _WORDS["en_fund_head"]
_EN_FUND_MID: list[str] = _WORDS["en_fund_mid"]
_EN_FUND_TAIL: list[str] = _WORDS["en_fund_tail"]
_EN_COMPANIES: list[str] = _WORDS["en_companies"]
_EN_BANKS: list[str] = _WORDS["en_banks"]
_EN_MARKETS: list[str] = _WORDS["en_markets"]
_EN_MONTHS: list[str] = _WORDS["en_months"]
_EN_NUMBER_WORDS: list[str] = _WORDS["en_number_words"]
_ZH_COMPANIES: list[str] = _WORDS["zh_companies"]
_ZH_FUNDS: list[str] = _WORDS["zh_funds"]
_ZH_EXCHANGES: list[str] = _WORDS["zh_exchanges"]
_ZH_DIGITS = "零一二三四五六七八九"
_ZH_NUMERAL_CHARS = set(_ZH_DIGITS + "十百千万亿两")

ENTITIES: frozenset[str] = frozenset(
    f"{h} {m} {t}" for h in _EN_FUND_HEAD for m in _EN_FUND_MID for t in _EN_FUND_TAIL
).union(_EN_COMPANIES, _EN_BANKS, _EN_MARKETS, _ZH_COMPANIES, _ZH_FUNDS, _ZH_EXCHANGES)


# --------------------------------------------------------------------------- slot values


def _zh_int(n: int) -> str:
    """``n`` (1..99) in Chinese numerals, as a wire writes ``三十五`` for 35."""
    tens, ones = divmod(n, 10)
    head = "" if tens == 0 else ("十" if tens == 1 else _ZH_DIGITS[tens] + "十")
    return head + (_ZH_DIGITS[ones] if ones or not head else "")


def _dec(lo: float, hi: float, places: int) -> Callable[[random.Random], str]:
    return lambda rng: f"{rng.uniform(lo, hi):.{places}f}"


def _int(lo: int, hi: int) -> Callable[[random.Random], str]:
    return lambda rng: str(rng.randint(lo, hi))


def _pick(pool: Sequence[str]) -> Callable[[random.Random], str]:
    return lambda rng: rng.choice(pool)


def _en_billions(rng: random.Random) -> str:
    """An amount as a wire writes it: ``1.5`` or ``TWO`` (as in ``TWO BILLION DLR``)."""
    return rng.choice(_EN_NUMBER_WORDS[:5]) if rng.random() < 0.3 else f"{rng.uniform(0.5, 9):.1f}"


def _zh_small(rng: random.Random) -> str:
    """Arabic or Chinese numerals, both common in Chinese briefs."""
    n = rng.randint(2, 99)
    return _zh_int(n) if rng.random() < 0.4 else str(n)


# slot -> (what it holds, how a value is drawn)
_SLOTS: dict[str, tuple[SlotKind, Callable[[random.Random], str]]] = {
    "fund": (
        "entity",
        lambda rng: " ".join(map(rng.choice, (_EN_FUND_HEAD, _EN_FUND_MID, _EN_FUND_TAIL))),
    ),
    "co": ("entity", _pick(_EN_COMPANIES)),
    "co2": ("entity", _pick(_EN_COMPANIES)),
    "bank": ("entity", _pick(_EN_BANKS)),
    "market": ("entity", _pick(_EN_MARKETS)),
    "date": ("date", lambda rng: f"{rng.choice(_EN_MONTHS)} {rng.randint(1, 28)}"),
    "cts": ("number", _dec(1.0, 25.0, 1)),
    "cts2": ("number", _dec(1.0, 25.0, 1)),
    "bln": ("number", _en_billions),
    "bln2": ("number", _dec(0.1, 9.0, 1)),
    "mln": ("number", _int(5, 950)),
    "mln2": ("number", _int(5, 950)),
    "pct": ("number", _dec(0.1, 9.9, 2)),
    "pts": ("number", _dec(100.0, 900.0, 2)),
    "usd": ("number", _dec(300.0, 480.0, 2)),
    "usd2": ("number", _dec(300.0, 480.0, 2)),
    "idx": ("number", _dec(9000.0, 39000.0, 2)),
    "q": ("number", _int(1, 4)),
    "shr": ("number", _int(5, 95)),
    "zco": ("entity", _pick(_ZH_COMPANIES)),
    "zfund": ("entity", _pick(_ZH_FUNDS)),
    "zex": ("entity", _pick(_ZH_EXCHANGES)),
    "zdate": ("date", lambda rng: f"{rng.randint(1, 12)}月{rng.randint(1, 28)}日"),
    "zq": ("number", lambda rng: rng.choice("一二三四")),
    "zn": ("number", _zh_small),
    "zn2": ("number", _zh_small),
    "zyuan": ("number", _dec(2.0, 98.0, 2)),
    "zpct": ("number", _dec(0.1, 9.9, 2)),
    "zyi": ("number", _int(20, 9800)),
    "zcash": ("number", _dec(0.01, 0.99, 3)),
}

# Each template has distinct slots, so a sibling that changes one slot changes one fact.
TEMPLATES: tuple[tuple[Lang, str], ...] = tuple(
    (lang, text) for lang in LANGS for text in _WORDS["templates"][lang]
)

_FORMAT = string.Formatter()


def _slots(template: int) -> list[str]:
    return [name for _, name, _, _ in _FORMAT.parse(TEMPLATES[template][1]) if name]


def slot_kinds(template: int) -> tuple[SlotKind, ...]:
    """What each slot of ``template`` holds, in order: a reader of a pair can tell which fact
    changed, and whether it is a name or a numeral."""
    return tuple(_SLOTS[name][0] for name in _slots(template))


def render(template: int, facts: Sequence[str]) -> str:
    """The text of ``template`` with its slots, in order, filled by ``facts``."""
    return TEMPLATES[template][1].format(**dict(zip(_slots(template), facts, strict=True)))


def _brief(rng: random.Random, template: int) -> Brief:
    facts = tuple(_SLOTS[name][1](rng) for name in _slots(template))
    return Brief(template, facts, render(template, facts))


def _sibling(rng: random.Random, brief: Brief) -> tuple[Brief, str]:
    """Change one fact (drawn again until it differs); the detail names the slot's kind."""
    names = _slots(brief.template)
    k = rng.randrange(len(names))
    kind, draw = _SLOTS[names[k]]
    value = brief.facts[k]
    while value == brief.facts[k]:
        value = draw(rng)
    facts = (*brief.facts[:k], value, *brief.facts[k + 1 :])
    return Brief(brief.template, facts, render(brief.template, facts)), kind


# --------------------------------------------------------------------------- numerals and noise

_EN_NUMBER_RE = re.compile(r"\b(?:" + "|".join(_EN_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def numerals(text: str) -> list[str]:
    """The numerals of ``text`` in order (digits, Chinese numeral characters, English number
    words, upper-cased): noise keeps this sequence, a changed number does not."""
    toks = re.findall(r"\d|[" + "".join(sorted(_ZH_NUMERAL_CHARS)) + r"]|[A-Za-z]+", text)
    return [
        t.upper() for t in toks if not (t.isascii() and t.isalpha()) or _EN_NUMBER_RE.fullmatch(t)
    ]


def has_numeral(text: str) -> bool:
    return bool(numerals(text)) or any(unicodedata.category(c) == "Nd" for c in text)


_EN_STOP: list[str] = _WORDS["en_stop"]
_ZH_STOP: list[str] = _WORDS["zh_stop"]
_EMOJI: list[str] = _WORDS["emoji"]
_SUFFIX: list[str] = _WORDS["suffixes"]


def _template_words(brief: Brief) -> str:
    """The template's own text with slots removed: only these characters may get a typo."""
    return "".join(lit for lit, _, _, _ in _FORMAT.parse(TEMPLATES[brief.template][1]))


def _typo(rng: random.Random, brief: Brief, text: str) -> str | None:
    """Swap two adjacent letters inside one template word that no fact contains."""
    lang = TEMPLATES[brief.template][0]
    pattern = r"[A-Za-z]{4,}" if lang == "en" else r"[\u4e00-\u9fff]{2,}"
    words = [w for w in re.findall(pattern, _template_words(brief)) if not has_numeral(w)]
    words = [w for w in words if not any(w in f for f in brief.facts) and text.count(w) == 1]
    if not words:
        return None
    w = rng.choice(words)
    i = rng.randrange(len(w) - 1)
    return None if w[i] == w[i + 1] else text.replace(w, w[:i] + w[i + 1] + w[i] + w[i + 2 :], 1)


def _drop_stop(rng: random.Random, brief: Brief, text: str) -> str | None:
    lang = TEMPLATES[brief.template][0]
    literal = _template_words(brief)
    if lang == "en":
        stops = [s for s in _EN_STOP if re.search(rf"(?<=\s){s}(?=\s)", literal)]
        return re.sub(rf"(?<=\s){rng.choice(stops)}\s", "", text, count=1) if stops else None
    stops = [s for s in _ZH_STOP if s in literal and not any(s in f for f in brief.facts)]
    return text.replace(rng.choice(stops), "", 1) if stops else None


def _punct(rng: random.Random, brief: Brief, text: str) -> str | None:
    """Template punctuation changes (a comma or colon dropped or swapped), never a decimal point."""
    swaps = {",": "", "，": ",", "：": ":", ":": " -", "<": "", ">": ""}
    marks = [c for c in swaps if c in _template_words(brief) and c in text]
    if marks:
        c = rng.choice(marks)
        return text.replace(c, swaps[c], 1)
    ends = (".", " .", "!") if TEMPLATES[brief.template][0] == "en" else ("。", "！", ".")
    return text + rng.choice(ends)


def _case(rng: random.Random, brief: Brief, text: str) -> str | None:
    if TEMPLATES[brief.template][0] != "en":  # Chinese has no case
        return None
    return rng.choice((str.lower, str.title, str.capitalize))(text)


def _space(rng: random.Random, brief: Brief, text: str) -> str | None:
    gaps = [m.start() for m in re.finditer(" ", text)]
    if gaps and rng.random() < 0.6:
        i = rng.choice(gaps)
        return text[:i] + rng.choice(("  ", "\t", " \n ")) + text[i + 1 :]
    return rng.choice(("  ", "\n", " ")) + text + rng.choice(("  ", "\n", ""))


def _emoji(rng: random.Random, brief: Brief, text: str) -> str | None:
    e = rng.choice(_EMOJI)
    return f"{e} {text}" if rng.random() < 0.5 else f"{text} {e}"


_NOISE: dict[str, Callable[[random.Random, Brief, str], str | None]] = {
    "case": _case,
    "punct": _punct,
    "space": _space,
    "typo": _typo,
    "emoji": _emoji,
    "suffix": lambda rng, _brief, text: text + rng.choice(_SUFFIX),
    "stop": _drop_stop,
}


def _noisy(rng: random.Random, brief: Brief) -> tuple[str, str]:
    """One or two noise kinds, drawn among those that change this brief (a Chinese brief has no
    case), so each kind is about as common as the others; the detail names them, in order."""
    text, used, want = brief.text, list[str](), rng.choice((1, 1, 2))
    for name in rng.sample(sorted(_NOISE), k=len(_NOISE)):
        changed = _NOISE[name](rng, brief, text)
        if changed is not None and changed != text:
            text, used = changed, [*used, name]
            if len(used) == want:
                break
    return text, "+".join(used)


# --------------------------------------------------------------------------- the stream


def _pair(rng: random.Random, lang: Lang, kind: PairKind) -> tuple[str, str, str]:
    """The two texts of one labelled pair and its detail."""
    pool = [i for i, (lg, _) in enumerate(TEMPLATES) if lg == lang]
    first = _brief(rng, rng.choice(pool))
    if kind == "copy":
        text, detail = _noisy(rng, first)
        return first.text, text, detail
    if kind == "sibling":
        second, detail = _sibling(rng, first)
        return first.text, second.text, detail
    other = rng.choice([t for t in pool if t != first.template])
    return first.text, _brief(rng, other).text, "other template"


def generate(pairs_per_kind: int = 300, *, seed: int = 13) -> tuple[list[BriefDoc], list[Pair]]:
    """Docs in stream order, each pair's first before its second, and the labelled pairs
    (``pairs_per_kind`` per language and kind, each with its own documents, interleaved)."""
    rng = random.Random(seed)
    placed: list[tuple[float, BriefDoc]] = []
    pairs: list[Pair] = []
    for n, (lang, kind, _) in enumerate(itertools.product(LANGS, KINDS, range(pairs_per_kind))):
        a, b, detail = _pair(rng, lang, kind)
        ida, idb = f"{lang}-{2 * n:05d}", f"{lang}-{2 * n + 1:05d}"
        at = rng.random()
        placed.append((at, BriefDoc(id=ida, text=a, lang=lang)))
        placed.append((at + (1 - at) * rng.random() + 1e-9, BriefDoc(id=idb, text=b, lang=lang)))
        pairs.append(Pair(ida, idb, kind, detail))
    placed.sort(key=lambda p: p[0])
    return [d for _, d in placed], pairs
