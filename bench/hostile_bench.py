"""Hostile input: the worst texts within the default limits, each stage timed alone.

For every stage a text goes through (JSON parsing, sketches, facts, numbers and dates, lines and
passages, evidence) and for the whole article (registered, then checked with evidence), the CPU
time per KB of each hostile recipe beside ordinary news text of the same size (Reuters-21578
stories run together): per KB of the text, and for parsing per KB of the message it reads.
Target: no stage costs more than 3x news per KB on any recipe, and no article within the
default size limit (1 MB) more than 1 s of CPU in all. Every recipe is a function of the size:
the table names it, so the worst found can be rebuilt.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench import cli, hostile_stream
from bench.hostile_stream import target
from bench.readings import git_state, machine_info
from harness import data
from harness.corpus import generate
from neardup.sketch import canonical, canonical_data, evidence, facts, features
from neardup.sketch.lines import passages_of
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.prepare import numbers_and_dates, prepare
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy
from neardup.stream.schema import parse_article

SIZES = (16_384, 131_072)  # bytes a recipe is cut to, per stage
REPS = 3  # runs of each stage and recipe, the least CPU kept
LIMIT = 1_000_000  # the default NEARDUP_MAX_MESSAGE_BYTES: the whole article at it
TARGET_RATIO = 3.0
TARGET_ARTICLE_S = 1.0


def _fill(unit: Callable[[int], str], size: int) -> str:
    parts, n, i = [], 0, 0
    while n < size:
        part = unit(i)
        parts.append(part)
        n += len(part.encode("utf-8"))
        i += 1
    return "".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")


def _news(size: int) -> str:
    texts = [d["text"] for d in data.reuters()[:4000]]
    return _fill(lambda i: texts[i % len(texts)] + "\n", size)


def _vocab(size: int) -> str:
    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "omega"]
    return _fill(lambda i: " ".join(rng.choice(words) for _ in range(4)) + ".\n", size)


def _news_page(size: int) -> str:
    texts = [d["text"] for d in data.reuters()[:4000]]
    pages = ["<p>" + t.replace("\n", "</p>\n<p>") + "</p>\n" for t in texts]
    return _fill(lambda i: pages[i % len(pages)], size)


CJK = "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生"


def _expansion_class(char: str) -> str:
    """What makes a code point several characters in the form: a ligature (by its name), a
    squared word (``<square>``), another compatibility decomposition, a canonical one whose
    marks do not compose again, or case folding alone."""
    tag = unicodedata.decomposition(char)
    if "LIGATURE" in unicodedata.name(char, ""):
        return "ligature"
    if tag.startswith("<square>"):
        return "squared"
    if tag.startswith("<"):
        return "compatibility"
    return "canonical" if tag else "case"


def worst_expanding() -> dict[str, str]:
    """For each class of :func:`_expansion_class`, the code point the form writes as the most
    characters (the lowest of a tie), read from the table the form bounds its work by
    (``canonical_data.EXPANDING``, computed from the Unicode data)."""
    pairs = canonical_data.EXPANDING
    worst: dict[str, tuple[int, int]] = {}
    for char, extra in zip(pairs[0::2], map(ord, pairs[1::2]), strict=True):
        key = _expansion_class(char)
        worst[key] = min(worst.get(key, (0, 0x110000)), (-extra, ord(char)))
    return {k: chr(v[1]) for k, v in sorted(worst.items())}


_WORST = worst_expanding()


def _at_the_bound(char: str) -> Callable[[int], str]:
    """``char`` among words, as often as the form's bound on expansion lets it expand."""
    extra = ord(canonical_data.EXPANDING[canonical_data.EXPANDING.index(char) + 1])
    room = round(extra / canonical.EXPANSION_SHARE) - 1  # characters of words per one
    return lambda n: _fill(lambda i: char + (f" w{i}" + " ab" * room)[:room], n)


def _phrases() -> list[str]:
    """The Chinese phrases the form folds as a whole (those it writes in other characters)."""
    words = canonical_data.PHRASES.split(" ")
    return [w for w in words[0::2] if w]


_PHRASES = _phrases()


def _expanding_recipes() -> dict[str, tuple[str, Callable[[int], str]]]:
    """A recipe per class of expanding code point (its worst, repeated), the worst one at the
    bound, a line of it each (a line alone is under the bound), and ``\u0149``."""
    out: dict[str, tuple[str, Callable[[int], str]]] = {}
    for key, char in _WORST.items():
        name = unicodedata.name(char).lower()
        out[f"expanding_{key}"] = (
            f"U+{ord(char):04X} ({name}, the {key} class's longest form) repeated",
            lambda n, c=char: _fill(lambda i: c, n),
        )
    fdfa, square = _WORST["ligature"], _WORST["squared"]
    out["expanding_at_the_bound"] = (
        f"U+{ord(fdfa):04X} among words as often as the bound lets it expand",
        _at_the_bound(fdfa),
    )
    out["squared_at_the_bound"] = (
        f"U+{ord(square):04X} among words as often as the bound lets it expand",
        _at_the_bound(square),
    )
    out["expanding_lines"] = (
        f'"\\u{ord(fdfa):04x}{{i}}" a line',
        lambda n: _fill(lambda i: f"{fdfa}{i}\n", n),
    )
    out["n_apostrophe"] = ('"\\u0149" repeated: case folds to two', lambda n: "\u0149" * (n // 2))
    return out


RECIPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "news": ("Reuters-21578 stories run together", _news),
    "repeated_passage": ('"a b c.\\n" repeated', lambda n: _fill(lambda i: "a b c.\n", n)),
    "one_word": ('"x" repeated: one word', lambda n: "x" * n),
    "distinct_lines": (
        '"w{i} x{i}" a line',
        lambda n: _fill(lambda i: f"w{i} x{i}\n", n),
    ),
    "digits": ('"{i} " numbers', lambda n: _fill(lambda i: f"{i} ", n)),
    "dates": (
        '"01/02/2003 4 March 2004 " repeated',
        lambda n: _fill(lambda i: f"{i % 28 + 1:02d}/02/2003 {i % 28 + 1} March 2004 ", n),
    ),
    "separators": (
        '"item {i} | " on one line',
        lambda n: _fill(lambda i: f"item {i} | ", n),
    ),
    "labels": ('"Label {i}: a b. " on one line', lambda n: _fill(lambda i: f"Label {i}: a b. ", n)),
    "combining": (
        '"a" and two combining marks, repeated',
        lambda n: _fill(lambda i: "a\u0301\u0302 ", n),
    ),
    "zero_width": (
        '"w\\u200bo\\u200br\\u200bd "',
        lambda n: _fill(lambda i: "w\u200bo\u200br\u200bd ", n),
    ),
    "cjk": ("CJK characters, no spaces", lambda n: _fill(lambda i: CJK[i % len(CJK)], n)),
    "few_words": ("4-word sentences of a 5-word vocabulary", _vocab),
    "cjk_lines": ('"字{i}" a line', lambda n: _fill(lambda i: f"{CJK[i % len(CJK)]}{i}\n", n)),
    "accented_lines": ('"é{i} ü{i}" a line', lambda n: _fill(lambda i: f"é{i} ü{i}\n", n)),
    "cjk_sentences": ('"字{i}。" on one line', lambda n: _fill(lambda i: f"{CJK[i % 40]}{i}。", n)),
    "small_numbers": ('"5 " repeated', lambda n: _fill(lambda i: "5 ", n)),
    "month_days": ('"may 5x " repeated', lambda n: _fill(lambda i: f"may {i % 28 + 1}x ", n)),
    "i_or_l": (
        '" \u0399x": a Greek capital iota before a small letter',
        lambda n: _fill(lambda i: " \u0399x", n),
    ),
    "i_or_l_runs": (
        '" \u0399\u0399x \u0436\u0399\u0436": look-alike runs, Cyrillic around',
        lambda n: _fill(lambda i: " \u0399\u0399x \u0436\u0399\u0436", n),
    ),
    "zero_width_lines": (
        '"w\\u200bo\\u200br\\u200bd{i}" a line',
        lambda n: _fill(lambda i: f"w\u200bo\u200br\u200bd{i}\n", n),
    ),
    "i_or_l_lines": (
        '"\u0399x{i}" a line: a Greek capital iota before a small letter',
        lambda n: _fill(lambda i: f"\u0399x{i}\n", n),
    ),
    "entities": ('"&#10;a{i}&amp;" a line', lambda n: _fill(lambda i: f"&#10;a{i}&amp;\n", n)),
    "news_page": ("Reuters-21578 stories as HTML, a <p> a paragraph", _news_page),
    "markup": ('"<p>w{i}</p>" repeated', lambda n: _fill(lambda i: f"<p>w{i}</p>", n)),
    "markup_after_a_stray_lt": (
        '"a < b " then "<p>w{i}</p>" repeated: the parser reads it all',
        lambda n: "a < b " + _fill(lambda i: f"<p>w{i}</p>", n - 6),
    ),
    "open_comment": ('"<!--" then "a-" repeated', lambda n: "<!--" + _fill(lambda i: "a-", n - 4)),
    "stray_lt_each_tag": (
        '"a < b <p>w{i}</p>" repeated: the parser needed at every element',
        lambda n: _fill(lambda i: f"a < b <p>w{i}</p>", n),
    ),
    "declarations": (
        '"<!x><p>w{i}</p>" repeated: a declaration before every element',
        lambda n: _fill(lambda i: f"<!x><p>w{i}</p>", n),
    ),
    "open_svg": (
        '"<svg>" then "<p>w{i}</p>" repeated: all of it hidden',
        lambda n: "<svg>" + _fill(lambda i: f"<p>w{i}</p>", n - 5),
    ),
    "malformed_tags": ("'<a\"b>w{i} ' repeated", lambda n: _fill(lambda i: f'<a"b>w{i} ', n)),
    "newlines": ('"\\n" repeated: an escape in JSON each', lambda n: "\n" * (n - 1) + "a"),
    "newlines_around": (
        '"\\n" repeated, a letter one from the end: read whole to find it',
        lambda n: "\n" * (n - 2) + "a\n",
    ),
    "controls": (
        '"a\\x01" repeated: a \\u0001 escape in JSON each',
        lambda n: _fill(lambda i: "a\x01", n),
    ),
    "a_tags": ('"<a " repeated: an element with no attribute', lambda n: _fill(lambda i: "<a ", n)),
    "open_tags": ('"<b>" repeated: nested, never closed', lambda n: _fill(lambda i: "<b>", n)),
    "a_tags_a_letter": (
        '"<a x" repeated: a letter after each tag, two letters a space apart',
        lambda n: _fill(lambda i: "<a x", n),
    ),
    "short_spaced_runs": (
        '"a-b " repeated: the shortest runs of spaced letters, a hyphen apart',
        lambda n: _fill(lambda i: "a-b ", n),
    ),
    "traditional_phrases": (
        "the Chinese phrases the form folds as a whole, run together",
        lambda n: _fill(lambda i: _PHRASES[i % len(_PHRASES)], n),
    ),
    **_expanding_recipes(),
}


_RAW: dict[str, bytes] = {}  # each text's message, made before its timing


def _message(text: str) -> None:
    _RAW[text] = orjson.dumps({"id": "x", "text": text})


STAGES: dict[str, Callable[[str], object]] = {
    # what the stream does with a message
    "parse": lambda text: parse_article(_RAW[text], max_text_bytes=LIMIT * 2),
    "sketch": lambda text: prepare(Policy(), [Article("x", text)]),
    "facts": lambda text: facts.facts_of(features.normalize(text)),
    "dates": lambda text: numbers_and_dates(text, features.normalize(text), True),
    "lines": lambda text: passages_of(text, "site.example", min_tokens=2, max_tokens=40),
    "evidence": lambda text: evidence.shared_spans(text, text),  # every passage is shared
}


def _input_bytes(stage: str, text: str) -> int:
    """The message for parsing (a text of newlines is half escapes there), else the text."""
    return len(_RAW[text]) if stage == "parse" else len(text.encode("utf-8"))


def _cpu(fn: Callable[[], object], calls: int = 1) -> float:
    """CPU seconds of one call of ``fn``, the mean over ``calls``, each from cold."""
    started = time.process_time()
    for _ in range(calls):
        canonical.forget_folds()  # the memo would hide a repeated stage's cost
        fn()
    return (time.process_time() - started) / calls


def _least(fn: Callable[[], object]) -> float:
    """The least of :data:`REPS` timings of ``fn``, each ~10 ms of calls (one call is noise)."""
    calls = max(1, round(0.01 / max(_cpu(fn), 1e-6)))
    return min(_cpu(fn, calls) for _ in range(REPS))


def _article(text: str) -> float:
    """CPU seconds of one article: registered, then a copy checked with evidence."""

    async def run() -> None:
        engine = Engine(MemoryIndex())
        for got in (
            await engine.process([Article("a", text)]),
            await engine.process([Article("b", text)], register=False, explain=True),
        ):
            assert not isinstance(got[0], NeardupError), got

    return _cpu(lambda: asyncio.run(run()))


def run() -> dict[str, Any]:
    stages: dict[str, dict[str, Any]] = {}
    for size in SIZES:
        texts = {name: make(size) for name, (_, make) in RECIPES.items()}
        for stage, fn in STAGES.items():
            for text in (*texts.values(), texts["news"][:1024]):
                _message(text)  # the parse stage times reading a message, not making it
            fn(texts["news"][:1024])  # warm-up: imports and tables are not the stage's work
            per_kb = {
                name: _least(lambda f=fn, t=text: f(t)) / (_input_bytes(stage, text) / 1024) * 1e3
                for name, text in texts.items()
            }
            base = per_kb["news"]
            worst = max((n for n in per_kb if n != "news"), key=lambda n: per_kb[n])
            stages[f"{stage} @ {size // 1024} KB"] = {
                "stage": stage,
                "size": size,
                "ms_per_kb": {k: round(v, 6) for k, v in per_kb.items()},
                "worst": worst,
                "ratio": round(per_kb[worst] / base, 2) if base else None,
            }
    articles = {name: round(_article(make(LIMIT)), 3) for name, (_, make) in RECIPES.items()}
    worst_article = max(articles, key=lambda n: articles[n])
    targets = [
        target(
            f"{key}: worst recipe's CPU per KB over news",
            r["ratio"],
            f"<= {TARGET_RATIO}x",
            r["ratio"] is not None and r["ratio"] <= TARGET_RATIO,
            r["worst"],
        )
        for key, r in stages.items()
    ]
    worst = articles[worst_article]
    what = f"one article of {LIMIT:,} bytes, registered and checked: CPU s"
    targets.append(
        target(what, worst, f"<= {TARGET_ARTICLE_S} s", worst <= TARGET_ARTICLE_S, worst_article)
    )
    return {
        "benchmark": "hostile",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(["numpy", "orjson"]),
        "code": git_state(),
        "recipes": {k: v[0] for k, v in RECIPES.items()},
        "stages": stages,
        "articles_cpu_s": articles,
        "targets": targets,
    }


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser("hostile", __doc__)
    parser.add_argument(
        "--requests", type=int, default=hostile_stream.REQUESTS, help="hostile requests (memory)"
    )
    args = parser.parse_args(argv)
    result = run()
    workdir = Path(tempfile.mkdtemp(prefix="neardup-bench-hostile-"))
    stream = hostile_stream.run(generate(2000, seed=7), workdir, args.requests)
    if stream is None:
        return 130
    result["stream"] = stream
    result["targets"] += stream["targets"]
    from bench import hostile_tables  # it reads this module's constants

    cli.write(args.out, "hostile", result, hostile_tables.markdown(result))
    for t in result["targets"]:
        state = "met" if t["met"] else "NOT MET"
        print(f"{state:8} {t['what']}: {t['value']} ({t['target']}; worst {t['worst']})")
    print(f"wrote {args.out / 'hostile.json'} and {args.out / 'hostile.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
