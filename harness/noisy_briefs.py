"""Real short newswire briefs from Reuters-21578, noisy copies of them and their real siblings.

Headlines and stories of fewer than 30 tokens (the short-text path's texts), each pair with its
own two documents: a ``copy`` is the brief with surface noise of one or more
:data:`COPY_FAMILIES` (to be linked); a ``sibling`` is another story of the same template, real
(:func:`real_siblings`) or made by a substitution of :data:`SIBLING_FAMILIES` (not to be
linked, and never a mere typo). One ``random.Random(seed)``: a seed names a data set.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal, TypedDict

from rapidfuzz.distance import OSA

from harness.data import reuters, templates

__all__ = [
    "COPY_FAMILIES",
    "SIBLING_FAMILIES",
    "NoisyPair",
    "RealDoc",
    "briefs",
    "generate",
    "noisy",
    "real_siblings",
]

PairKind = Literal["copy", "sibling"]
MAX_TOKENS = 29  # Policy.short_tokens is 30: fewer tokens take the short path
_TOKEN_RE = re.compile(r"\w+")
_NUM_RE = re.compile(r"\d+(?:[.,]\d+)*")


class RealDoc(TypedDict):
    id: str
    text: str
    lang: str


@dataclass(frozen=True, slots=True)
class NoisyPair:
    """``first`` is earlier than ``second`` in the stream; ``detail`` names the noise families
    (``+`` between) or the substitution."""

    first: str
    second: str
    kind: PairKind
    detail: str


# --------------------------------------------------------------------------- the real briefs


def _short_enough(text: str) -> bool:
    return 4 <= len(_TOKEN_RE.findall(text)) <= MAX_TOKENS


@cache
def briefs() -> tuple[str, ...]:
    """Distinct real short briefs of the wire, in wire order: headlines of 4 to 29 tokens and
    stories that short, once each (case and spacing folded to tell them apart)."""
    out: dict[str, str] = {}  # folded text -> the first brief that folds to it
    for story in reuters():
        text = story["text"].strip()
        head = text.split("\n")[0].strip()
        for t in (head, text) if text != head else (head,):
            if _short_enough(t):
                out.setdefault(" ".join(t.lower().split()), t)
    return tuple(out.values())


def _bare(token: str) -> str:
    return re.sub(r"\W", "", token).lower()


@cache
def real_siblings() -> tuple[tuple[str, str, str], ...]:
    """Pairs of distinct real briefs of one template, ``(earlier, later, detail)``: the same text
    but for their numbers (``real number``) or for one word that is no typo (``real month``,
    ``real word``). At most one pair per template text."""
    pool = briefs()
    out: list[tuple[str, str, str]] = []
    by_mask: dict[str, list[str]] = defaultdict(list)
    for t in pool:
        if _NUM_RE.search(t):
            by_mask[" ".join(_NUM_RE.sub("#", t).split())].append(t)
    for group in by_mask.values():
        distinct = [t for t in group if _NUM_RE.findall(t) != _NUM_RE.findall(group[0])]
        if distinct:
            out.append((group[0], distinct[0], "real number"))
    by_gap: dict[tuple[int, str], list[str]] = defaultdict(list)
    for t in pool:
        words = t.split()
        for i in range(len(words)):
            key = " ".join([*words[:i], "_", *words[i + 1 :]])
            by_gap[(i, key)].append(t)
    used: set[str] = {t for pair in out for t in pair[:2]}
    for (i, _), group in sorted(by_gap.items(), key=lambda kv: kv[0]):
        a = next((t for t in group if t not in used), None)
        if a is None:
            continue
        wa = _bare(a.split()[i])
        for b in group:
            wb = _bare(b.split()[i])
            if b == a or b in used or not wa or not wb or wa == wb or not wa.isalpha():
                continue
            if not wb.isalpha() or OSA.distance(wa, wb) < 2:  # numbers, typos, plurals
                continue
            if {wa, wb} & _STOP:  # "HELP IN MONEY MARKET" / "HELP TO ...": the same story
                continue
            detail = "real month" if {wa, wb} <= _MONTHS else "real word"
            out.append((a, b, detail))
            used |= {a, b}
            break
    return tuple(out)


# --------------------------------------------------------------------------- noise families

_WORDS = templates("noisy_briefs")
_SOURCES: list[str] = _WORDS["sources"]
_END_TAGS: list[str] = _WORDS["end_tags"]  # {s}: a source
_START_TAGS: list[str] = _WORDS["start_tags"]
_FIRST: list[str] = _WORDS["first_names"]
_LAST: list[str] = _WORDS["last_names"]
_BYLINES_END: list[str] = _WORDS["bylines_end"]  # {n}, {m}: a name
_BYLINES_START: list[str] = _WORDS["bylines_start"]
_TAGS: list[str] = _WORDS["hashtags"]
_LINKS: list[str] = _WORDS["links"]  # {n}: a number
_EMOJI: list[str] = _WORDS["emoji"]
_MONTHS = frozenset(_WORDS["months"])  # lower case, abbreviations too
_NUMBER_WORDS = frozenset(_WORDS["number_words"])
_MONTH_WORDS: list[str] = _WORDS["month_words"]
_STOP = frozenset(_WORDS["stop_words"])

Noise = Callable[[random.Random, str], str | None]


def _name(rng: random.Random) -> str:
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def _tag_end(rng: random.Random, text: str) -> str | None:
    tag = rng.choice(_END_TAGS).format(s=rng.choice(_SOURCES))
    return text + (" " + tag if tag[0] not in " ,." else tag)


def _tag_start(rng: random.Random, text: str) -> str | None:
    return rng.choice(_START_TAGS).format(s=rng.choice(_SOURCES)) + text


def _byline(rng: random.Random, text: str) -> str | None:
    if rng.random() < 0.6:
        form = rng.choice(_BYLINES_END)
        return text + form.format(n=_name(rng), m=_name(rng), s=rng.choice(_SOURCES))
    return rng.choice(_BYLINES_START).format(n=_name(rng), s=rng.choice(_SOURCES)) + text


def _via(rng: random.Random, text: str) -> str | None:
    form = rng.choice((" (via {s})", " via {s}", " (via @{h})", " - via {s}"))
    return text + form.format(s=rng.choice(_SOURCES), h=rng.choice(("wire", "newsdesk", "Reuters")))


def _hashtag(rng: random.Random, text: str) -> str | None:
    tags = " ".join(rng.sample(_TAGS, rng.choice((1, 1, 2))))
    return f"{tags} {text}" if rng.random() < 0.3 else f"{text} {tags}"


def _link(rng: random.Random, text: str) -> str | None:
    link = rng.choice(_LINKS).format(n=rng.randrange(10**6))
    return f"{link} {text}" if rng.random() < 0.2 else f"{text} {link}"


def _emoji(rng: random.Random, text: str) -> str | None:
    e = "".join(rng.sample(_EMOJI, rng.choice((1, 1, 2))))
    where = rng.random()
    if where < 0.4:
        return f"{e} {text}"
    if where < 0.8:
        return f"{text} {e}"
    return f"{e} {text} {rng.choice(_EMOJI)}"


# punctuation inside a word: between letters (U.S., TREASURY'S, TAX-FREE, <OBOD>), never in a
# number (1,750 and 7.5 are facts)
_INSIDE_RE = re.compile(r"(?<=[A-Za-z])[.'’-](?=[A-Za-z])|(?<=\b[A-Z])\.(?=\s|$)")
_BETWEEN_RE = re.compile(r"(?<![\d])[,;:]\s|\s[-–—]+\s|\s?--\s?|[<>()\[\]\"]|[.!?]$")


def _punct_out(rng: random.Random, text: str) -> str | None:
    """Punctuation removed (or a hyphen made a space) inside words: ``U.S.`` -> ``US``,
    ``TREASURY'S`` -> ``TREASURYS``, ``TAX-FREE`` -> ``TAXFREE`` or ``TAX FREE``."""
    spots = list(_INSIDE_RE.finditer(text))
    if not spots:
        return None
    chosen = {m.start() for m in spots if rng.random() < 0.7} or {rng.choice(spots).start()}
    return "".join(
        (" " if c == "-" and rng.random() < 0.4 else "") if i in chosen else c
        for i, c in enumerate(text)
    )


def _punct_in(rng: random.Random, text: str) -> str | None:
    """Punctuation added inside words: an apostrophe before a final S, periods in a short
    upper-case word (``US`` -> ``U.S.``), a hyphen into a long word."""
    words = text.split(" ")
    spots = [i for i, w in enumerate(words) if w.isalpha() and len(w) >= 2]
    if not spots:
        return None
    for i in rng.sample(spots, min(len(spots), rng.choice((1, 1, 2)))):
        w = words[i]
        if len(w) <= 3 and w.isupper():
            words[i] = ".".join(w) + "."
        elif w[-1] in "sS" and len(w) >= 4:
            words[i] = w[:-1] + "'" + w[-1]
        elif len(w) >= 6:
            cut = rng.randrange(2, len(w) - 2)
            words[i] = w[:cut] + "-" + w[cut:]
        else:
            words[i] = w + "."
    return " ".join(words)


def _punct_between(rng: random.Random, text: str) -> str | None:
    """Punctuation between words removed, swapped or added (commas, dashes, colons, brackets,
    a final full stop); never a decimal point or a thousands comma."""
    spots = list(_BETWEEN_RE.finditer(text))
    if spots and rng.random() < 0.7:
        m = rng.choice(spots)
        repl = rng.choice((" ", " - ", ": ", ", ", " "))
        return (text[: m.start()] + repl + text[m.end() :]).strip()
    gaps = [m.start() for m in re.finditer(r"(?<=[A-Za-z]) (?=[A-Za-z])", text)]
    if gaps and rng.random() < 0.6:
        i = rng.choice(gaps)
        return text[:i] + rng.choice((",", " -", ":", ";", " --")) + text[i:]
    return text + rng.choice((".", "!", " ...", "."))


def _rebreak(rng: random.Random, text: str) -> str | None:
    """The brief re-broken over lines: some spaces become line breaks (with spaces around,
    doubled), others doubled or tabs."""
    words = text.split()
    if len(words) < 3:
        return None
    out = [words[0]]
    for w in words[1:]:
        r = rng.random()
        if r < 0.3:
            gap = rng.choice(("\n", "  \n", "\n  ", " \n\n", "\r\n"))
        elif r < 0.6:
            gap = rng.choice(("  ", "   ", "\t", " \t "))
        else:
            gap = " "
        out.append(gap + w)
    return rng.choice(("", " ", "\n")) + "".join(out) + rng.choice(("", "  ", "\n"))


def _case(rng: random.Random, text: str) -> str | None:
    how: Callable[[str], str] = rng.choice((str.lower, str.title, str.capitalize, str.upper))
    changed = how(text)
    return changed if changed != text else text.swapcase()


def _glue(rng: random.Random, text: str) -> str | None:
    """Two or three words run together or hyphenated (``TAX FREE`` -> ``TAX-FREE``); numbers in
    words included, never digits (``1,750 TONNES`` stays)."""
    words = list(re.finditer(r"(?<!\S)[A-Za-z]+(?: [A-Za-z]+){1,2}(?!\S)", text))
    spots = [m for m in words if len(m.group()) <= 24]
    if not spots:
        return None
    m = rng.choice(spots)
    parts = m.group().split(" ")
    if len(parts) == 3 and rng.random() < 0.5:
        parts = parts[:2] if rng.random() < 0.5 else parts[1:]
        glued = rng.choice(("", "-")).join(parts)
        at = m.group().index(" ".join(parts))
        return text[: m.start() + at] + glued + text[m.start() + at + len(" ".join(parts)) :]
    return text[: m.start()] + rng.choice(("", "-")).join(parts) + text[m.end() :]


def _typo(rng: random.Random, text: str) -> str | None:
    """One typo in one word: two adjacent letters swapped (a word of four letters or more),
    or a letter changed, added or dropped (six or more)."""
    words = [
        m
        for m in re.finditer(r"(?<![\w])[A-Za-z]{4,}(?![\w])", text)
        if m.group().lower() not in _NUMBER_WORDS | _MONTHS  # a number or a date is a fact
    ]
    if not words:
        return None
    m = rng.choice(words)
    w, at = m.group(), m.start()
    if len(w) < 6 or rng.random() < 0.4:
        i = rng.randrange(len(w) - 1)
        if w[i].lower() == w[i + 1].lower():
            return None
        new = w[:i] + w[i + 1] + w[i] + w[i + 2 :]
    else:
        i = rng.randrange(1, len(w) - 1)
        letter = rng.choice("aeiounrst")
        letter = letter.upper() if w.isupper() else letter
        op = rng.randrange(3)
        if op == 0 and letter.lower() != w[i].lower():
            new = w[:i] + letter + w[i + 1 :]
        elif op == 1:
            new = w[:i] + letter + w[i:]
        else:
            new = w[:i] + w[i + 1 :]
    return text[:at] + new + text[m.end() :]


COPY_FAMILIES: dict[str, Noise] = {
    "tag end": _tag_end,
    "tag start": _tag_start,
    "byline": _byline,
    "via": _via,
    "hashtag": _hashtag,
    "link": _link,
    "emoji": _emoji,
    "punct out": _punct_out,
    "punct in": _punct_in,
    "punct between": _punct_between,
    "glue": _glue,
    "rebreak": _rebreak,
    "case": _case,
    "typo": _typo,
}


def noisy(rng: random.Random, text: str, families: Sequence[str]) -> str | None:
    """``text`` with each noise family applied in order, or ``None`` when one cannot change it
    (no punctuation to remove, no word long enough for a typo). At most one typo."""
    for name in families:
        changed = COPY_FAMILIES[name](rng, text)
        if changed is None or changed == text:
            return None
        text = changed
    return text


# --------------------------------------------------------------------------- substitutions

_WORD_RE = re.compile(r"(?<![\w.'-])[A-Za-z]{3,}(?![\w'-])")


@cache
def _vocabulary() -> tuple[str, ...]:
    """Content words of the briefs (four letters or more, not month names), to substitute."""
    seen: Counter[str] = Counter()
    for t in briefs():
        seen.update(w for w in _WORD_RE.findall(t) if len(w) >= 4 and w.isupper())
    return tuple(
        w for w, n in seen.items() if n >= 3 and w.lower() not in _MONTHS and _VOWEL_RE.search(w)
    )


_VOWEL_RE = re.compile("[AEIOUY]", re.IGNORECASE)


def _sub_number(rng: random.Random, text: str) -> str | None:
    """A number's value changed, written the same way: one digit (not into a leading zero)."""
    spots = list(_NUM_RE.finditer(text))
    if not spots:
        return None
    m = rng.choice(spots)
    i = m.start() + rng.choice([i for i, c in enumerate(m.group()) if c.isdigit()])
    choices = [d for d in "0123456789" if d != text[i] and not (d == "0" and i == m.start())]
    return text[:i] + rng.choice(choices or ["1"]) + text[i + 1 :]


_SCALES = ("MLN", "BILLION", "BLN", "PCT", "CTS", "DLRS", "TONNES", "YEN", "STG", "MARKS")


def _sub_amount(rng: random.Random, text: str) -> str | None:
    """An amount changed: its figure multiplied (``720.4 MLN`` -> ``72.04 MLN`` or
    ``1,440.8``), or its scale (``MLN`` -> ``BILLION``), or a number word changed."""
    scaled = list(re.finditer(r"(\d+(?:[.,]\d+)*)\s+(" + "|".join(_SCALES) + r")\b", text, re.I))
    if scaled and rng.random() < 0.5:
        m = rng.choice(scaled)
        unit = m.group(2)
        others = [s for s in _SCALES if s.lower() != unit.lower() and len(s) >= 3]
        new_unit = rng.choice(others)
        new_unit = new_unit if unit.isupper() else new_unit.lower()
        return text[: m.start(2)] + new_unit + text[m.end(2) :]
    words = list(re.finditer(r"\b(one|two|three|four|five|six|seven|eight|nine|ten)\b", text, re.I))
    if words and rng.random() < 0.5:
        m = rng.choice(words)
        pool = ["two", "three", "four", "five", "six", "seven", "eight", "nine"]
        new = rng.choice([w for w in pool if w != m.group().lower()])
        new = new.upper() if m.group().isupper() else new
        return text[: m.start()] + new + text[m.end() :]
    return _sub_number(rng, text)


def _sub_date(rng: random.Random, text: str) -> str | None:
    """A date changed: its month named anew, or its day (``MARCH 12`` -> ``MARCH 19``)."""
    months = [
        m
        for m in re.finditer(r"[A-Za-z]+(?=(\s+\d{1,2}\b)?)", text)
        if m.group().lower() in _MONTHS
        and (m.group(1) or m.group().lower() not in ("may", "march"))
    ]
    if not months:
        return None
    m = rng.choice(months)
    after = re.match(r"\s+(\d{1,2})\b", text[m.end() :])
    if after and rng.random() < 0.5:
        at = m.end() + after.start(1)
        day = after.group(1)
        new = str(rng.choice([d for d in range(1, 29) if str(d) != day]))
        return text[:at] + new + text[at + len(day) :]
    old = m.group()
    pool = [w for w in _MONTH_WORDS if not w.lower().startswith(old.lower()[:3])]
    new = rng.choice(pool)
    new = new if old.isupper() else new.capitalize()
    return text[: m.start()] + new + text[m.end() :]


def _sub_word(rng: random.Random, text: str, where: str) -> str | None:
    """A content word replaced by another word of the wire (two edits or more away, not a
    month): the first, the last or one inside."""
    spots = [m for m in _WORD_RE.finditer(text) if m.group().lower() not in _STOP]
    spots = [m for m in spots if m.group().lower() not in _MONTHS and _VOWEL_RE.search(m.group())]
    if len(spots) < 3:
        return None
    m = spots[0] if where == "first" else spots[-1] if where == "last" else rng.choice(spots[1:-1])
    old = m.group()
    vocab = _vocabulary()
    for _ in range(50):
        new = rng.choice(vocab)
        if OSA.distance(new.lower(), old.lower()) >= 2 and new.lower() not in text.lower():
            break
    else:
        return None
    new = new if old.isupper() else new.lower() if old.islower() else new.capitalize()
    return text[: m.start()] + new + text[m.end() :]


SIBLING_FAMILIES: dict[str, Callable[[random.Random, str], str | None]] = {
    "synthetic number": _sub_number,
    "synthetic amount": _sub_amount,
    "synthetic date": _sub_date,
    "synthetic name first": lambda rng, t: _sub_word(rng, t, "first"),
    "synthetic word inside": lambda rng, t: _sub_word(rng, t, "inside"),
    "synthetic word last": lambda rng, t: _sub_word(rng, t, "last"),
}


# --------------------------------------------------------------------------- the stream


def generate(
    copies_per_family: int = 150, siblings_per_family: int = 150, *, seed: int = 21
) -> tuple[list[RealDoc], list[NoisyPair]]:
    """Docs in stream order, each pair's first before its second, and the labelled pairs: per
    copy family ``copies_per_family`` copies alone, as many combined, as many re-broken with a tag;
    per substitution ``siblings_per_family`` siblings, half with noise besides; every real sibling
    pair. A brief is in one pair at most."""
    rng = random.Random(seed)
    reals = real_siblings()
    used = {t for a, b, _ in reals for t in (a, b)}
    pool = [t for t in briefs() if t not in used]
    rng.shuffle(pool)
    free = iter(pool)
    made: list[tuple[str, str, PairKind, str]] = []
    plans: list[list[str]] = []
    names = sorted(COPY_FAMILIES)
    for name in names:
        plans += [[name] for _ in range(copies_per_family)]
        for _ in range(copies_per_family):
            others = rng.sample([n for n in names if n != name], rng.choice((1, 1, 2)))
            plans.append(rng.sample([name, *others], 1 + len(others)))
    plans += [["rebreak", "tag end"]] * copies_per_family
    for plan in plans:
        if "typo" in plan:  # the typo is the brief's, made before a tag or a link is added
            plan = ["typo", *(n for n in plan if n != "typo")]
        for _ in range(20):
            brief = next(free)
            copy = noisy(rng, brief, plan)
            if copy is not None and _short_enough(copy):  # both on the short-text path
                if plan == ["punct in"] or (plan[0] == "punct out" and rng.random() < 0.3):
                    # punctuation added: the bare form first, the punctuated copy second
                    brief, copy = (copy, brief) if plan[0] == "punct out" else (brief, copy)
                made.append((brief, copy, "copy", "+".join(plan)))
                break
    noise_names = [n for n in names if n != "typo"]
    for fam, sub in SIBLING_FAMILIES.items():
        done = 0
        while done < siblings_per_family:
            brief = next(free)
            changed = sub(rng, brief)
            if changed is None or changed == brief or not _short_enough(changed):
                continue
            detail = fam
            if done % 2:
                extra = rng.choice(noise_names)
                noised = noisy(rng, changed, [extra])
                if noised is None or not _short_enough(noised):
                    continue
                changed, detail = noised, f"{fam} + noise"
            made.append((brief, changed, "sibling", detail))
            done += 1
    made += [(a, b, "sibling", d) for a, b, d in reals]
    placed: list[tuple[float, RealDoc]] = []
    pairs: list[NoisyPair] = []
    for n, (a, b, kind, detail) in enumerate(made):
        ida, idb = f"nb-{2 * n:05d}", f"nb-{2 * n + 1:05d}"
        at = rng.random()
        placed.append((at, RealDoc(id=ida, text=a, lang="en")))
        placed.append((at + (1 - at) * rng.random() + 1e-9, RealDoc(id=idb, text=b, lang="en")))
        pairs.append(NoisyPair(ida, idb, kind, detail))
    placed.sort(key=lambda p: p[0])
    return [d for _, d in placed], pairs
