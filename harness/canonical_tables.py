"""Generate ``sketch/canonical_data/``, the tables of the canonical form, from the Unicode data.

``python -m harness.canonical_tables [--check]``. The tables are generated here and committed so
that every machine folds text the same way whatever library versions it has (a silent change
would make stored signatures meaningless); ``--check`` exits 1 when the installed libraries give
other tables (then bump ``CANONICAL_FORM`` and re-index). Sources (dev dependencies): ``regex``
(default ignorables, combining marks, decimal digits), ``confusable-homoglyphs`` (UTS #39: a
letter confusable with one ASCII letter maps to it; ASCII and digits never), the character names
of the Unicode data (a styled letter, ``NEGATIVE CIRCLED LATIN CAPITAL LETTER A``, maps to the
letter its name names) and ``opencc`` (the characters that convert into each other form one class;
a phrase OpenCC writes for a mainland word maps to that word, and no mainland word to another).
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
import textwrap
import unicodedata
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "sketch" / "canonical_data"
_HAN_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2EBEF),
    (0x30000, 0x3134F),
)
_OPENCC_CONFIGS = ("t2s", "s2t", "tw2s", "hk2s", "s2tw", "s2hk", "t2tw", "t2hk", "tw2t", "hk2t")


def _all_chars() -> str:
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)


def removed() -> list[int]:
    """Default-ignorable code points and enclosing marks (a circle or keycap drawn around a
    character is never part of a word)."""
    import regex

    found = regex.findall(r"[\p{Default_Ignorable_Code_Point}\p{Me}]", _all_chars())
    return sorted(ord(c) for c in found)


def marks() -> list[int]:
    """Every combining mark (Mn, Mc, Me): a part of the word its base starts."""
    import regex

    return sorted(ord(c) for c in regex.findall(r"\p{M}", _all_chars()))


def shared_marks() -> list[int]:
    """Non-spacing marks no script owns (Script Inherited or Common: the combining diacriticals
    U+0300-036F, Arabic harakat, kana voicing marks), but those removed: the marks that can sit
    on a letter of any script, and so the marks added to disguise a text."""
    import regex

    gone = set(removed())
    found = regex.findall(r"\p{Mn}", _all_chars())
    return sorted(
        ord(c)
        for c in found
        if ord(c) not in gone and regex.match(r"\p{sc=Zinh}|\p{sc=Zyyy}", c) is not None
    )


def digits() -> dict[int, str]:
    """Every decimal digit but ASCII's, as its ASCII digit."""
    import regex

    out = {}
    for c in regex.findall(r"\p{Nd}", _all_chars()):
        if not c.isascii():
            value = unicodedata.digit(c, None)
            if value is not None:
                out[ord(c)] = str(value)
    return out


def confusable_letters() -> dict[int, str]:
    """Letters of other scripts whose confusable prototype is one ASCII letter, and marks of
    punctuation whose prototype is one ASCII punctuation mark (UTS #39); never a digit."""
    package = resources.files("confusable_homoglyphs")
    data = json.loads(package.joinpath("confusables.json").read_text(encoding="utf-8"))
    out: dict[int, str] = {}
    for char, entries in data.items():
        if len(char) != 1 or char.isascii():
            continue
        category = unicodedata.category(char)
        if category[0] == "L":
            targets = _ascii_letters(entries)
            # the prototype's own ASCII look-alikes too: Cyrillic І's prototype is l, I is one
            targets = sorted(
                {*targets, *(t for p in targets for t in _ascii_letters(data.get(p, [])))}
            )
            if not targets:
                targets = _ascii_punctuation(entries) if category == "Lm" else []  # ʼ -> '
        elif category[0] in "PS":
            targets = _ascii_punctuation(entries)  # ‚ -> , and ∕ -> /
        else:
            continue
        if not targets:
            continue
        if "I" in targets and "l" in targets:
            continue  # an I or an l as its neighbours say: see i_or_l
        same_case = [t for t in targets if t.isupper() == char.isupper()]
        out[ord(char)] = (same_case or targets)[0]
    return out


# words a styled letter's name puts before the letter's own name (``NEGATIVE CIRCLED``, ``TORTOISE
# SHELL BRACKETED``, ``MODIFIER LETTER``): the style, not another letter
_STYLE_WORDS = frozenset(
    ("NEGATIVE", "CIRCLED", "SQUARED", "PARENTHESIZED", "CROSSED", "ITALIC", "MODIFIER", "LETTER",
     "SUPERSCRIPT", "SUBSCRIPT", "TORTOISE", "SHELL", "BRACKETED", "DOUBLE", "OUTLINED", "INVERSE")
)  # fmt: skip
_STYLED_RE = re.compile(r"(.+?) (LATIN|GREEK|CYRILLIC) (CAPITAL|SMALL) LETTER (.+)")
_SMALL_CAPITAL_RE = re.compile(r"(.*?)\b(LATIN|GREEK|CYRILLIC) LETTER SMALL CAPITAL (.+)")
_REGIONAL_RE = re.compile(r"REGIONAL INDICATOR SYMBOL LETTER ([A-Z])")


def _named(name: str) -> str | None:
    """The character named ``name``, or None."""
    try:
        return unicodedata.lookup(name)
    except KeyError:
        return None


def _styled_target(char: str) -> str | None:
    """The letter a styled letter stands for, read from its name: a small capital as its small
    letter (``LATIN LETTER SMALL CAPITAL R`` -> ``r``), a letter in a style of the enclosed and
    modifier blocks as the letter (``NEGATIVE SQUARED LATIN CAPITAL LETTER A`` -> ``A``), a
    regional indicator as its letter, an enclosed letter that decomposes to the letter between
    brackets (``PARENTHESIZED LATIN SMALL LETTER A``, ``(a)``) as the letter alone."""
    name = unicodedata.name(char, "")
    if m := _REGIONAL_RE.fullmatch(name):
        return m.group(1).lower()
    m = _SMALL_CAPITAL_RE.fullmatch(name)
    if m and set(m.group(1).split()) <= _STYLE_WORDS:
        return _named(f"{m.group(2)} SMALL LETTER {m.group(3)}")
    m = _STYLED_RE.fullmatch(name)
    found = None
    if m and set(m.group(1).split()) <= _STYLE_WORDS:
        found = _named(f"{m.group(2)} {m.group(3)} LETTER {m.group(4)}")
    if found is not None:
        return found
    parts = unicodedata.normalize("NFKD", char)
    if len(parts) >= 3 and unicodedata.category(parts[0]) == "Ps":
        inner = unicodedata.normalize("NFC", parts[1:-1])
        if unicodedata.category(parts[-1]) == "Pe" and len(inner) == 1 and inner.isalpha():
            return inner
    return None


def styled_letters() -> dict[int, str]:
    """Letters styled without a compatibility mapping to the letter they show (negative
    circled and squared letters, small capitals, regional indicators, a letter decomposing
    between brackets): each as the letter its name names. Those compatibility decomposition
    already makes that letter are left to it."""
    out: dict[int, str] = {}
    for char in _all_chars():
        target = _styled_target(char)
        if target is None or target == char:
            continue
        if unicodedata.normalize("NFKD", char) != unicodedata.normalize("NFKD", target):
            out[ord(char)] = target
    return out


def expanding() -> dict[int, int]:
    """Code points the form writes as more than one character, each with how many more:
    compatibility decomposition (ligatures such as U+FDFA, 18 characters; squared words such
    as U+3316; parenthesized numbers), case folding (``\u00df`` as ``ss``, ``\u0149``), and
    both, as the form reads them (NFKD, case folded, NFKD again, then composed: a letter and
    its marks, which compose again, are one). A code point the form maps before decomposing
    (a parenthesized or circled letter, read as its letter) does not expand. The form bounds
    its work by them (:func:`neardup.sketch.canonical.fold`)."""
    from neardup.sketch.canonical import _before_nfkd  # MAPPED and REMOVED only

    before = _before_nfkd()  # read before decomposition: a styled letter (U+249C) as one
    out: dict[int, int] = {}
    for char in _all_chars():
        if ord(char) in before:
            continue
        parts = unicodedata.normalize("NFKD", char)
        if len(parts) == 1 and len(char.casefold()) == 1:
            continue
        folded = unicodedata.normalize("NFKD", parts.casefold())
        extra = len(unicodedata.normalize("NFC", folded)) - 1
        if extra > 0:
            out[ord(char)] = extra
    return out


def i_or_l() -> str:
    """Letters of other scripts that look like both a capital I and a small l (UTS #39 gives
    both prototypes: Greek and Cyrillic capital I, palochka). No table can read them: the form
    reads each from its neighbours (:func:`neardup.sketch.canonical.fold`)."""
    package = resources.files("confusable_homoglyphs")
    data = json.loads(package.joinpath("confusables.json").read_text(encoding="utf-8"))
    found = []
    for char, entries in data.items():
        if len(char) != 1 or char.isascii() or unicodedata.category(char)[0] != "L":
            continue
        targets = set(_ascii_letters(entries))
        targets |= {t for p in targets for t in _ascii_letters(data.get(p, []))}
        if {"I", "l"} <= targets and unicodedata.normalize("NFKD", char) == char:
            found.append(char)
    return "".join(sorted(found))


def _ascii_punctuation(entries: list[dict[str, str]]) -> list[str]:
    found = (e["c"].strip("\u200e\u200f") for e in entries)
    return sorted({t for t in found if len(t) == 1 and t.isascii() and t in string.punctuation})


def _ascii_letters(entries: list[dict[str, str]]) -> list[str]:
    found = (e["c"].strip("\u200e\u200f") for e in entries)
    return sorted({t for t in found if len(t) == 1 and t.isascii() and t.isalpha()})


def _han_chars() -> Iterable[str]:
    for lo, hi in _HAN_RANGES:
        for c in range(lo, hi + 1):
            ch = chr(c)
            if unicodedata.normalize("NFKD", ch) == ch:
                yield ch


def han_variants() -> dict[int, str]:
    """Each Han character that OpenCC converts to or from another, as its class's member."""
    import opencc

    converters = {name: opencc.OpenCC(name) for name in _OPENCC_CONFIGS}
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    simplified: set[str] = set()
    for ch in _han_chars():
        for name, conv in converters.items():
            out = conv.convert(ch)
            if name == "t2s" and out == ch:
                simplified.add(ch)
            if len(out) == 1 and out != ch and unicodedata.normalize("NFKD", out) == out:
                a, b = find(ch), find(out)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    classes: dict[str, list[str]] = {}
    for ch in list(parent):
        root = find(ch)
        classes.setdefault(root, [root]).append(ch)
    out_map: dict[int, str] = {}
    for members in classes.values():
        members = sorted(set(members))
        rep = min((m for m in members if m in simplified), default=members[0])
        for m in members:
            if m != rep:
                out_map[ord(m)] = rep
    return out_map


_FROM_MAINLAND = ("s2t", "s2tw", "s2twp", "s2hk", "s2hkp")
_VOCABULARY = ("s2twp", "s2hkp")  # regional words, not only regional characters
_TO_MAINLAND = ("tw2sp", "hk2sp", "t2s")


def _opencc_phrases() -> set[str]:
    """Every phrase (two Han characters or more) of OpenCC's phrase dictionaries, read from the
    binary dictionaries the ``opencc`` wheel ships, with the ``opencc_dict`` tool it ships."""
    import subprocess
    import tempfile

    import opencc
    import regex

    clib = Path(opencc.__file__).resolve().parent / "clib"
    tool, share = clib / "bin" / "opencc_dict", clib / "share" / "opencc"
    env = {"LD_LIBRARY_PATH": ":".join(str(p) for p in (clib / "lib64", clib / "lib"))}
    han = regex.compile(r"\p{Han}{2,}")
    found: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for dictionary in sorted(share.glob("*Phrases*.ocd2")):
            if dictionary.name.startswith("JP"):
                continue  # Japanese shinjitai: not a Chinese script
            out = Path(tmp) / (dictionary.stem + ".txt")
            args = [str(tool), "-i", str(dictionary), "-o", str(out), "-f", "ocd2", "-t", "text"]
            subprocess.run(args, check=True, env=env, capture_output=True)
            for line in out.read_text(encoding="utf-8").splitlines():
                found.update(p for p in line.replace("\t", " ").split() if han.fullmatch(p))
    return found


def han_phrases(chars: dict[int, str]) -> dict[str, str]:
    """Phrases OpenCC writes as a whole into other characters than their characters' classes
    give (``软件`` -> Taiwan's ``軟體``), each mapped to the mainland word it was written for.

    The fold is directed, from the forms OpenCC's conversions of a mainland word write to the
    word, so that what reads differently stays different: ``访问`` and ``存取`` are two words,
    though ``tw2sp`` reads Taiwan's ``存取`` as ``访问``. A script conversion (``s2t``, ``s2tw``,
    ``s2hk``) writes the same word (``想像`` for ``想象``); a regional word (``s2twp``,
    ``s2hkp``) folds only where OpenCC reads it back as the word and it is no mainland word
    itself (``搜寻`` for ``搜索`` stays). A form written for several mainland words maps to the
    one OpenCC reads it as, or to none; one whose member would not fold to it in a text (one
    phrase inside another) is left out."""
    import opencc

    t2s = opencc.OpenCC("t2s")
    to_mainland = [opencc.OpenCC(name) for name in _TO_MAINLAND]
    regional = {name: opencc.OpenCC(name) for name in _FROM_MAINLAND}
    mainland: dict[str, str] = {}  # each mainland word as written, by its folded characters
    for phrase in sorted(_opencc_phrases()):
        if all(c.convert(phrase) == phrase for c in to_mainland):
            mainland.setdefault(phrase.translate(chars), phrase)
        for conv in to_mainland:  # a mainland word for a regional one (tw2sp: 軟體 -> 软件)
            if (out := conv.convert(phrase)) != t2s.convert(phrase):
                mainland.setdefault(out.translate(chars), out)
    written_for: dict[str, set[str]] = {}  # each form: the mainland words written so
    read_back: dict[str, set[str]] = {}  # and the words OpenCC's mainland conversions read
    for member, word in sorted(mainland.items()):
        for name, conv in regional.items():
            out = conv.convert(word)
            form = out.translate(chars)
            if form == member or len(form) < 2 or any(c.isascii() for c in form + member):
                continue
            back = {c.convert(out).translate(chars) for c in to_mainland}
            if name in _VOCABULARY and (form in mainland or member not in back):
                continue  # another mainland word, or a reading OpenCC does not give back
            written_for.setdefault(form, set()).add(member)
            read_back.setdefault(form, set()).update(back)
    table: dict[str, str] = {}
    for form, words in written_for.items():
        if len(words) > 1:  # written for several: OpenCC's reading of it chooses, if one
            words &= read_back[form]
        if len(words) == 1:
            table[form] = min(words)
    while True:  # leave out the phrases a text would not fold to their member
        bad = {k for k, rep in table.items() if _replace(k, table) != rep}
        bad |= {k for k, rep in table.items() if _replace(rep, table) != rep}
        if not bad:
            return table
        table = {k: rep for k, rep in table.items() if k not in bad}


def _replace(text: str, table: dict[str, str]) -> str:
    """Longest phrase first, left to right (what :func:`neardup.sketch.canonical.fold` does)."""
    longest = max(map(len, table), default=0)
    out, i = [], 0
    while i < len(text):
        for size in range(min(longest, len(text) - i), 1, -1):
            rep = table.get(text[i : i + size])
            if rep is not None:
                out.append(rep)
                i += size
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _ranges(points: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for p in points:
        if out and out[-1][1] == p - 1:
            out[-1] = (out[-1][0], p)
        else:
            out.append((p, p))
    return out


def _folded(confusable: dict[int, str], ambiguous: str) -> dict[int, str]:
    """Look-alikes as the form reads them after case folding: a letter case folding leaves as
    it is, to the small form of what its capital looks like (``\u0432`` to ``b``, as
    ``\u0412`` is ``B``; ``\u03bd`` to ``n``, as ``\u039d`` is ``N``: a word in capitals
    reads as it looks), else to its own ASCII look-alike; a letter that looks like I or l but
    has no case, to ``i`` (alone it reads so)."""
    out: dict[int, str] = {}
    for cp, to in sorted(confusable.items()):
        low = chr(cp).casefold()
        if len(low) == 1 and low != chr(cp) and not low.isascii() and ord(low) not in out:
            out[ord(low)] = to.casefold()
    for cp, to in confusable.items():
        c = chr(cp)
        if c.casefold() == c:
            out.setdefault(cp, to.casefold())
    for c in ambiguous:
        if c.casefold() == c:
            out.setdefault(ord(c), "i")
    return out


def latin_read(confusable: dict[int, str], folded: dict[int, str]) -> dict[int, str]:
    """Letters whose look-alike is not what the form reads them as after case folding (Greek
    ``\u03bd`` looks like ``v`` but is read as its capital ``\u039d``, ``N``): inside a word
    written with ASCII letters (a Latin word in disguise) they are read as they look, before
    case folding."""
    out: dict[int, str] = {}
    for cp, to in confusable.items():
        c = chr(cp)
        low = c.casefold()
        if len(low) == 1 and not low.isascii() and to.casefold() != folded.get(ord(low), low):
            out[cp] = to  # (a Latin letter that folds to ASCII, long s, reads as it folds)
    return out


def _mapped(
    han: dict[int, str],
) -> tuple[dict[int, str], dict[int, str], dict[int, str], str, dict[int, str], dict[int, str]]:
    """The characters the form maps, ``(digits, confusables, han, i_or_l, latin, styled)``:
    other scripts' digits, look-alikes of ASCII letters and marks as read after case folding
    (:func:`_folded`), Han variants (:func:`han_variants`), the letters that look like both a
    capital I and a small l, which no table maps in a Latin word, the capitals read apart in a
    Latin word (:func:`latin_read`), and styled letters (:func:`styled_letters`, as read after
    case folding: :func:`_styled_folded`)."""
    gone = _ranges(removed())
    confusable = confusable_letters()
    ambiguous = i_or_l()
    figures = digits()
    folded = _folded(confusable, ambiguous)
    latin = latin_read(confusable, folded)
    styled = _styled_folded({**han, **folded}, ambiguous)
    for span in gone:  # what the form removes it never maps
        for cp in range(span[0], span[1] + 1):
            folded.pop(cp, None)
            han.pop(cp, None)
            styled.pop(cp, None)
    return figures, folded, han, ambiguous, latin, styled


def _styled_folded(folded: dict[int, str], ambiguous: str) -> dict[int, str]:
    """Styled letters (:func:`styled_letters`) as the form reads them, after case folding:
    each by its case folded self, to the case folded letter its name names, read on where that
    letter is mapped itself (``folded``: Greek small capital rho, ρ: p; a Han variant);
    a look-alike's own mapping wins."""
    out: dict[int, str] = {}
    for cp, to in styled_letters().items():
        key, low = chr(cp).casefold(), to.casefold()
        if chr(cp) in ambiguous or len(key) != 1 or len(low) != 1 or ord(key) in folded:
            continue
        out[ord(key)] = folded.get(ord(low), low)
    return out


# each table module holds at most about this many lines of string literals: a longer table is
# cut into parts of near-equal length (``han_variants_1``, ``han_variants_2``, ...)
PART_LINES = 450
_WIDTH = 88  # characters of a string literal's line


def _escaped(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii")


def _parts(entries: list[str]) -> list[str]:
    """``entries`` (escaped, in order) joined into as few strings of near-equal length as keep
    each within :data:`PART_LINES` lines of literals; an entry is never cut."""
    total = sum(map(len, entries))
    n = max(1, -(-total // (PART_LINES * _WIDTH)))
    parts: list[list[str]] = [[] for _ in range(n)]
    done = 0
    for entry in entries:
        parts[min(n - 1, done * n // total)].append(entry)
        done += len(entry)
    return ["".join(part) for part in parts]


def _module(doc: str, body: list[str]) -> str:
    return "\n".join(
        [
            f'"""{doc}',
            "",
            'Generated by ``python -m harness.canonical_tables``: do not edit.\n"""',
            "",
            *body,
            "",
            "__all__: list[str] = []  # joined in neardup.sketch.canonical_data",
            "",
        ]
    )


def _literal(name: str, comment: list[str], lines: list[str]) -> list[str]:
    return [*(f"# {c}" for c in comment), f"{name} = (", *lines, ")"]


def _join_line(name: str, operands: list[str]) -> list[str]:
    """``name = a + b + ...`` as ``ruff format`` writes it."""
    line = f"{name} = {' + '.join(operands)}"
    if len(line) <= 100:
        return [line]
    return [f"{name} = (", f"    {operands[0]}", *(f"    + {o}" for o in operands[1:]), ")"]


def render() -> dict[str, str]:
    """The package's modules, by file name: one per table (a long table in parts), and
    ``__init__.py``, which joins them into the tables :mod:`neardup.sketch.canonical` reads."""
    gone = _ranges(removed())
    variants_of = han_variants()
    figures, confusable, han, ambiguous, latin, styled = _mapped(variants_of)
    phrases = han_phrases(variants_of)
    files: dict[str, str] = {}
    files["removed.py"] = _module(
        "The code points the canonical form removes.",
        _literal(
            "REMOVED",
            [
                "default-ignorable code points and enclosing marks, as hexadecimal ranges",
                "first-last",
            ],
            _range_lines(gone),
        ),
    )
    files["marks.py"] = _module(
        "Combining marks: every one (a part of a word), and those no script owns.",
        [
            *_literal(
                "MARKS",
                ["every combining mark (Mn, Mc, Me), as hexadecimal ranges first-last"],
                _range_lines(_ranges(marks())),
            ),
            "",
            *_literal(
                "SHARED_MARKS",
                [
                    "non-spacing marks of Script Inherited or Common (but those removed), as",
                    "hexadecimal ranges first-last",
                ],
                _range_lines(_ranges(shared_marks())),
            ),
        ],
    )
    mapped_comment = ["the characters it maps, each followed by what it maps to (one character)"]
    files["script_digits.py"] = _module(
        "The decimal digits of other scripts, as ASCII digits: a part of ``MAPPED``.",
        _literal(
            "MAPPED",
            mapped_comment,
            _chunks(_escaped("".join(chr(k) + v for k, v in figures.items())), _WIDTH),
        ),
    )
    files["confusables.py"] = _module(
        "Letters and marks that look like ASCII ones (UTS #39): a part of ``MAPPED``.",
        [
            *_literal(
                "MAPPED",
                [
                    *mapped_comment,
                    "(after case folding: a small letter with no look-alike of its own maps as",
                    "its capital)",
                ],
                _chunks(_escaped("".join(chr(k) + v for k, v in confusable.items())), _WIDTH),
            ),
            "",
            "# letters that look like a capital I and a small l alike: read from their neighbours",
            f'I_OR_L = "{_escaped(ambiguous)}"',
            "",
            "# capitals read as the ASCII letter they look like inside a Latin word, each",
            "# followed by it (their small forms look like another letter)",
            f'LATIN = "{_escaped("".join(chr(k) + v for k, v in latin.items()))}"',
        ],
    )
    files["styled.py"] = _module(
        "Styled letters without a compatibility mapping, as the letter their name names (negative\n"
        "circled and squared letters, small capitals, regional indicators): a part of ``MAPPED``.",
        _literal(
            "MAPPED",
            mapped_comment,
            _chunks(_escaped("".join(chr(k) + v for k, v in styled.items())), _WIDTH),
        ),
    )
    variants = _parts([_escaped(chr(k) + v) for k, v in han.items()])
    for i, part in enumerate(variants, 1):
        files[f"han_variants_{i}.py"] = _module(
            f"Han script variants, as their class's member: part {i} of {len(variants)} of "
            "them in ``MAPPED``.",
            _literal("MAPPED", mapped_comment, _chunks(part, _WIDTH)),
        )
    phrase_parts = _parts([_escaped(f"{k} {v} ") for k, v in sorted(phrases.items())])
    for i, part in enumerate(phrase_parts, 1):
        files[f"han_phrases_{i}.py"] = _module(
            f"Han phrases OpenCC converts as a whole: part {i} of {len(phrase_parts)} of "
            "``PHRASES``.",
            _literal(
                "PHRASES",
                ["each phrase followed by a space, its class's member and a space"],
                _chunks(part, _WIDTH),
            ),
        )
    files["expanding.py"] = _module(
        "Code points the form writes as more than one character: its work is bounded by them.",
        _literal(
            "EXPANDING",
            [
                "each code point followed by a character whose code is how many more characters",
                "the form writes it as",
            ],
            _chunks(_escaped("".join(chr(k) + chr(v) for k, v in expanding().items())), _WIDTH),
        ),
    )
    files["__init__.py"] = _package(len(variants), len(phrase_parts))
    return files


def _package(variant_parts: int, phrase_parts: int) -> str:
    import confusable_homoglyphs
    import opencc
    import regex

    variants = [f"han_variants_{i}" for i in range(1, variant_parts + 1)]
    phrases = [f"han_phrases_{i}" for i in range(1, phrase_parts + 1)]
    modules = sorted(
        [
            "confusables",
            "expanding",
            "marks",
            "removed",
            "script_digits",
            "styled",
            *variants,
            *phrases,
        ]
    )
    return "\n".join(
        [
            '"""Tables of the canonical form, generated by ``python -m harness.canonical_tables``.',
            "",
            "Do not edit: regenerate. Sources: the Unicode Character Database through ``regex`` "
            f"{regex.__version__},",
            "the Unicode confusables (UTS #39) through ``confusable-homoglyphs`` "
            f"{confusable_homoglyphs.__version__}, OpenCC's",
            f"tables through ``opencc`` {opencc.__version__} (see sketch/CANONICAL_DATA.md for the "
            "licences).",
            "",
            "One module per table, a long one in parts: ``removed`` (default-ignorable code points",
            "and enclosing marks), ``marks`` (combining marks, and those no script owns),",
            "``script_digits`` (digits of other scripts), ``confusables`` (look-alikes of ASCII",
            "letters and marks, the letters read as I or l, the capitals read apart in a Latin",
            "word), ``styled`` (styled letters by their names), ``expanding`` (code points",
            "written as several characters), ``han_variants_*`` (Han script variants),",
            "``han_phrases_*`` (Han phrases). Joined here into the tables",
            ":mod:`neardup.sketch.canonical` reads.",
            '"""',
            "",
            "from neardup.sketch.canonical_data import (",
            *(f"    {m}," for m in modules),
            ")",
            "",
            "# the code points the canonical form removes, as hexadecimal ranges first-last",
            "REMOVED = removed.REMOVED",
            "# every combining mark, and the non-spacing marks no script owns (ranges)",
            "MARKS = marks.MARKS",
            "SHARED_MARKS = marks.SHARED_MARKS",
            "# the characters it maps, each followed by what it maps to (one character): digits of",
            "# other scripts, letters that look like ASCII letters, styled letters, Han script",
            "# variants",
            *_join_line(
                "MAPPED",
                [
                    "script_digits.MAPPED",
                    "confusables.MAPPED",
                    "styled.MAPPED",
                    *(f"{v}.MAPPED" for v in variants),
                ],
            ),
            "# letters that look like a capital I and a small l alike: read from their neighbours",
            "I_OR_L = confusables.I_OR_L",
            "# capitals read as the ASCII letter they look like inside a Latin word",
            "LATIN = confusables.LATIN",
            "# code points the form writes as more than one character, each followed by a",
            "# character whose code is how many more",
            "EXPANDING = expanding.EXPANDING",
            "# Han phrases OpenCC converts as a whole, each followed by a space, its class's",
            "# member and a space",
            *_join_line("PHRASES", [f"{p}.PHRASES" for p in phrases]),
            "",
            "__all__: list[str] = []  # read by neardup.sketch.canonical alone",
            "",
        ]
    )


def _range_lines(spans: list[tuple[int, int]]) -> list[str]:
    ranges = " ".join(f"{a:x}-{b:x}" for a, b in spans)
    return [f'    "{line} "' for line in textwrap.wrap(ranges, _WIDTH, break_on_hyphens=False)]


def _chunks(escaped: str, width: int) -> list[str]:
    """String literals of at most ``width`` characters, cut where an escape starts."""
    out, start = [], 0
    while start < len(escaped):
        end = min(start + width, len(escaped))
        while end < len(escaped) and escaped[end] != "\\":
            end -= 1  # back to the start of an escape (every mapped pair begins with one)
        if end <= start:
            end = min(start + width, len(escaped))
        out.append(f'    "{escaped[start:end]}"')
        start = end
    return out


def _written() -> dict[str, str]:
    """The package's modules as committed, by file name."""
    if not TARGET.is_dir():
        return {}
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(TARGET.glob("*.py"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    files = render()
    if args.check:
        same = _written() == files
        print("canonical tables up to date" if same else f"{TARGET} differs: regenerate it")
        return 0 if same else 1
    TARGET.mkdir(exist_ok=True)
    for name in set(_written()) - set(files):  # a part the tables no longer need
        (TARGET / name).unlink()
    for name, text in files.items():
        (TARGET / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} modules in {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
