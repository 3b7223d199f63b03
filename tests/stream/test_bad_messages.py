"""Hostile input: the parser, the key builders and the engine never crash and never mix tenants.

Every bad message must end as :class:`~neardup.stream.errors.InvalidMessage` with a reason from a
fixed set (the dead-letter topic and the metrics group by it); any other exception would fail a
whole batch instead of dead-lettering one message. Namespaces become part of Redis key names, so the
charset check is what keeps a tenant's hash tag ``{ns}`` out of another's keys: it is asserted at
every layer that builds keys (schema, the namespace rule of
:mod:`neardup.stream.names` that :mod:`neardup.stream.index.redis.keys` re-exports,
the engine).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup.sketch import features
from neardup.stream import names
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import InvalidMessage
from neardup.stream.index.base import BufferedRegistration
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys
from neardup.stream.model import Article, Verdict
from neardup.stream.schema import article_from_obj, parse_article

REASONS = frozenset(
    {
        "oversize",
        "invalid_utf8",
        "invalid_json",
        "not_object",
        "missing_id",
        "invalid_id",
        "missing_text",
        "empty_text",
        "invalid_namespace",
        "invalid_field",
    }
)
OPTIONAL = ("title", "url", "lang", "published_at")
NS_OK = re.compile(
    r"[A-Za-z0-9_.-]{1,64}"
)  # the documented contract, independent of neardup.stream.index.redis.keys
LIMIT = 4096  # a small text limit, so generated input reaches the oversize path

FAST = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- strategies

# What str can hold and a parser may not expect: lone surrogates, NUL and other controls,
# bidi overrides and marks, zero-width joiners, combining marks, BOM, non-characters, astral
# planes, tag characters, and the characters that mean something in Redis key names.
ODD = [
    "\x00",
    "\x1b",
    "\x7f",
    "\x85",
    "\u200b",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u202e",
    "\u2028",
    "\u2066",
    "\ufeff",
    "\ufffe",
    "\uffff",
    "\ud800",
    "\udfff",
    "\u0301",
    "\u0338",
    "\u3000",
    "\U0001f600",
    "\U0001f469\u200d\U0001f4bb",
    "\U000e0041",
    "\U0010ffff",
    "\ufdfa",
    "\u4e2d",
    "\u0645",
    "}",
    "{",
    ":",
    "*",
    "\\",
    '"',
    " ",
    "\n",
]
odd_text = st.lists(st.sampled_from(ODD), max_size=40).map("".join)
any_text = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec=None), max_size=40),  # surrogates included
    odd_text,
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=3), st.integers(0, 3000)),
)
giant_numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**300, -(10**4000)]),
    st.floats(allow_nan=True, allow_infinity=True),
)
json_scalars = st.one_of(st.none(), st.booleans(), giant_numbers, any_text)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(any_text, inner, max_size=6)
    ),
    max_leaves=25,
)


def field_values(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly plausible values for a field, sometimes anything JSON can carry."""
    return st.one_of(good, good, json_values)


good_ids = st.one_of(
    st.text(string.ascii_letters + string.digits + "-_:/", min_size=1, max_size=20),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(["x}:d", "{b}", "*", "nd:{b}:d", "a b", "é" * 256, "x" * 512]),
)
good_texts = st.one_of(st.text(min_size=1, max_size=200), odd_text)
good_namespaces = st.one_of(
    st.from_regex(NS_OK, fullmatch=True),
    st.sampled_from(["a", "b", "default", "x" * 64, "x" * 65, "a}", "{b}", "a:b", "*", " a"]),
)
messages = st.fixed_dictionaries(
    {"id": field_values(good_ids), "text": field_values(good_texts)},
    optional={
        "namespace": field_values(good_namespaces),
        **{name: field_values(st.one_of(st.none(), st.text(max_size=20))) for name in OPTIONAL},
        "extra": json_values,
    },
)


def dumps(obj: Any, ensure_ascii: bool = False) -> bytes:
    """JSON text the way hostile producers write it: NaN, huge integers, escaped surrogates."""
    return json.dumps(obj, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- checks


def check_article(article: Article, *, limit: int = LIMIT) -> None:
    """What every accepted article guarantees to the engine and the index."""
    assert isinstance(article, Article)
    assert isinstance(article.id, str) and article.id
    assert article.id.isprintable()
    assert len(article.id.encode("utf-8")) <= keys.ID_MAX_BYTES  # strict: no surrogates
    assert isinstance(article.text, str) and article.text.strip()
    assert len(article.text.encode("utf-8")) <= limit
    assert isinstance(article.namespace, str) and NS_OK.fullmatch(article.namespace)
    for name in OPTIONAL:
        assert getattr(article, name) is None or isinstance(getattr(article, name), str)


def outcome(call: Callable[[], Article], *, limit: int = LIMIT) -> Article | InvalidMessage:
    """Run the parser; anything but an article or a known rejection fails the test."""
    try:
        article = call()
    except InvalidMessage as exc:
        assert exc.reason in REASONS, exc.reason
        assert str(exc)
        return exc
    check_article(article, limit=limit)
    return article


def parse(raw: bytes | str, **kw: Any) -> Article | InvalidMessage:
    return outcome(lambda: parse_article(raw, max_text_bytes=LIMIT, **kw))


def from_obj(obj: Any, **kw: Any) -> Article | InvalidMessage:
    return outcome(lambda: article_from_obj(obj, max_text_bytes=LIMIT, **kw))


# --------------------------------------------------------------------------- the parser


@FAST
@given(st.binary(max_size=2 * LIMIT + 70_000))
@example(b"")
@example(b"\xff\xfe{}")
@example(b'{"id": "a", "text": "\xc3"}')
@example(b'{"id": "a", "text": "\xed\xa0\x80"}')  # a surrogate encoded as UTF-8 (CESU)
@example(b'\xef\xbb\xbf{"id": "a", "text": "b"}')  # BOM
@example(b"x" * (2 * LIMIT + 65_537))
def test_arbitrary_bytes(raw: bytes) -> None:
    parse(raw)


@FAST
@given(json_values, st.booleans())
def test_arbitrary_json_values(value: Any, ensure_ascii: bool) -> None:
    parse(dumps(value, ensure_ascii))
    from_obj(value)


@FAST
@given(messages, st.booleans())
@example({"id": 0.0, "text": "0"}, False)
def test_article_shaped_messages(msg: dict[str, Any], ensure_ascii: bool) -> None:
    via_obj = from_obj(msg)
    via_json = parse(dumps(msg, ensure_ascii))
    if isinstance(via_obj, Article):
        ns = msg.get("namespace")
        assert via_obj.namespace == ("default" if ns is None else ns)
        raw_id = msg["id"]
        # an integer is its decimal text; a float is never an id: 7.0 is not "7", which another
        # message may name (it has no text of its own here, and a float's text is not an integer)
        assert not isinstance(raw_id, float)
        assert via_obj.id == str(raw_id)
        if isinstance(via_json, Article):
            assert via_json == via_obj
    elif isinstance(msg["id"], float):  # the id is read first, once the JSON is read
        assert isinstance(via_json, InvalidMessage)
        assert via_json.reason in {"invalid_id", "invalid_json"}  # NaN anywhere: no JSON


def _reason(got: Article | InvalidMessage) -> str | Article:
    return got.reason if isinstance(got, InvalidMessage) else got


@st.composite
def near_the_limit(draw: st.DrawFn) -> tuple[str, int]:
    """A limit and a text of one repeated piece whose UTF-8 lies around it."""
    unit = draw(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40))
    limit = draw(st.integers(10, LIMIT))
    around = limit // len(unit.encode("utf-8"))
    return unit * draw(st.integers(max(1, around - 2), around + 2)), limit


@FAST
@given(near_the_limit(), st.booleans())
@example(("\n" * 4096, 4096), False)  # an escape each: the message is twice the text
@example(("\u0399" * 2048, 4096), True)  # six bytes of message for two of text
@example(("\U0001f600" * 1025, 4096), False)  # one past the limit, astral
def test_a_message_read_whole_is_measured_as_its_text_would_be(
    case: tuple[str, int], ensure_ascii: bool
) -> None:
    """The stream skips measuring a text whose message is within the limit (its JSON is never
    smaller than its UTF-8); a message past it is measured: either way the answer is the one
    measuring the text gives, at and around the limit, with escapes of every kind."""
    text, limit = case
    msg = {"id": "a", "text": text}
    raw = dumps(msg, ensure_ascii)
    via_json = outcome(lambda: parse_article(raw, max_text_bytes=limit), limit=limit)
    via_obj = outcome(lambda: article_from_obj(msg, max_text_bytes=limit), limit=limit)
    assert _reason(via_json) == _reason(via_obj)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid message with a few byte-level edits (flip, delete, insert, truncate, splice)."""
    msg = {
        "id": draw(st.text(min_size=1, max_size=10)),
        "text": draw(st.text(min_size=1, max_size=100)),
        "namespace": draw(st.from_regex(NS_OK, fullmatch=True)),
        "title": draw(st.text(max_size=10)),
    }
    raw = bytearray(dumps(msg, draw(st.booleans())))
    for _ in range(draw(st.integers(1, 6))):
        if not raw:
            break
        at = draw(st.integers(0, len(raw) - 1))
        op = draw(st.sampled_from(["flip", "delete", "insert", "truncate", "splice"]))
        if op == "flip":
            raw[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete":
            del raw[at]
        elif op == "insert":
            raw[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif op == "truncate":
            del raw[at:]
        else:
            raw[at:at] = draw(st.sampled_from([b'"', b"{", b"}", b"[", b"\\u", b"\\ud800", b","]))
    return bytes(raw)


@FAST
@given(mutated())
def test_mutated_valid_messages(raw: bytes) -> None:
    parse(raw)
    parse(raw.decode("utf-8", "surrogateescape"))  # str input, lone surrogates and all


@pytest.mark.parametrize("depth", [1, 100, 1023, 1024, 1025, 5000, 40_000])
@pytest.mark.parametrize(
    ("opening", "closing"),
    [("[", "]"), ('{"a":', "}"), ('{"id":"a","text":"b","x":', "}")],
    ids=["list", "object", "inside-article"],
)
def test_deeply_nested_json(depth: int, opening: str, closing: str) -> None:
    raw = (opening * depth + "0" + closing * depth).encode()
    got = parse(raw)
    if depth > 1024:  # orjson's recursion limit: refused as JSON, never a RecursionError
        assert isinstance(got, InvalidMessage) and got.reason in {"invalid_json", "oversize"}
        got = outcome(lambda: parse_article(raw))  # the default limit: the JSON depth decides
        assert isinstance(got, InvalidMessage) and got.reason == "invalid_json"


def test_deeply_nested_python_object() -> None:
    value: Any = "x"
    for _ in range(100_000):
        value = {"text": value}
    got = from_obj({"id": "a", "text": "b", "title": value})
    assert isinstance(got, InvalidMessage) and got.reason == "invalid_field"
    got = from_obj(value)
    assert isinstance(got, InvalidMessage) and got.reason == "missing_id"


@pytest.mark.parametrize(
    "number",
    [
        "1" * 30,
        "-" + "9" * 400,
        "1e400",
        "-1e400",
        "1e-400",
        "1.5e308",
        "0." + "0" * 5000 + "1",
        "9" * 5000,
        "NaN",
        "Infinity",
        "-0",
    ],
)
@pytest.mark.parametrize("field", ["id", "text", "namespace", "title"])
def test_giant_and_odd_numbers_in_json(number: str, field: str) -> None:
    fields = {"id": '"a"', "text": '"b"', field: number}
    raw = "{" + ",".join(f'"{k}":{v}' for k, v in fields.items()) + "}"
    got = parse(raw.encode())
    if field == "id":  # an integer as written, never a rounded float; anything else refused
        if isinstance(got, Article):
            assert re.fullmatch(r"-?[1-9][0-9]*", number) and got.id == number
        elif re.fullmatch(r"-?[1-9][0-9]*", number) and len(number) <= keys.ID_MAX_BYTES:
            with pytest.raises(orjson.JSONDecodeError):  # past a double's range: no JSON to orjson
                orjson.loads(number)
        else:
            assert isinstance(got, InvalidMessage) and got.reason in {"invalid_id", "invalid_json"}


@pytest.mark.parametrize(
    "number",
    [2**64, -(2**63) - 1, 10**300, 10**4299, 10**4300, -(10**5000), 10**100_000],
    ids=lambda n: f"{'-' if n < 0 else ''}{n.bit_length()}bits",
)
def test_giant_integer_ids_from_python(number: int) -> None:
    """``article_from_obj`` is public: callers hand it Python ints, which have no size limit.

    ``str(int)`` refuses more than 4300 digits with a ValueError (CPython's int/str DoS guard);
    an id that long is over the byte limit anyway, so it must be an ``invalid_id``.
    """
    got = from_obj({"id": number, "text": "some text"})
    if abs(number) < 10 ** (keys.ID_MAX_BYTES - (number < 0)):  # at most 512 characters
        assert isinstance(got, Article) and got.id == str(number)
    else:
        assert isinstance(got, InvalidMessage) and got.reason == "invalid_id"


@FAST
@given(st.text(st.characters(codec=None), max_size=80), st.sampled_from(["id", "text", "title"]))
@example("\ud800", "text")
@example("\udc80abc", "id")
@example("a\x00b", "id")
@example("a\x00b", "text")
@example("\u202egnp.exe", "id")
@example("\u0301" * 1000, "text")
@example("\u200b", "text")
def test_odd_unicode_fields(value: str, field: str) -> None:
    msg = {"id": "a", "text": "b", field: value}
    via_obj = from_obj(msg)
    if field == "id" and isinstance(via_obj, Article):
        assert value.isprintable()
    if field == "text" and isinstance(via_obj, Article):
        assert via_obj.text == value  # text is kept as sent; normalisation is the engine's job
    parse(dumps(msg))
    parse(dumps(msg, ensure_ascii=True))


def test_reasons_of_known_bad_messages() -> None:
    cases: list[tuple[bytes, str]] = [
        (b"\xff", "invalid_utf8"),
        (b"{", "invalid_json"),
        (b'"\\ud800"', "invalid_json"),
        (b"[1]", "not_object"),
        (b"null", "not_object"),
        (b'{"text": "b"}', "missing_id"),
        (b'{"id": "", "text": "b"}', "missing_id"),
        (b'{"id": true, "text": "b"}', "missing_id"),
        (b'{"id": 1.5, "text": "b"}', "invalid_id"),
        # a number that would read as the integer another text names is refused
        (b'{"id": 1e300, "text": "b"}', "invalid_id"),
        (b'{"id": 1e3, "text": "b"}', "invalid_id"),
        (b'{"id": 1.0, "text": "b"}', "invalid_id"),
        (b'{"id": -0, "text": "b"}', "invalid_id"),
        (b'{"id": -0.0, "text": "b"}', "invalid_id"),
        (b'{"id": -9999999999.0, "text": "b"}', "invalid_id"),
        (b'{"id": "a\\n", "text": "b"}', "invalid_id"),
        (b'{"id": "a\\u0000", "text": "b"}', "invalid_id"),
        (b'{"id": "\\u202eexe", "text": "b"}', "invalid_id"),
        (b'{"id": "a"}', "missing_text"),
        (b'{"id": "a", "text": 5}', "missing_text"),
        (b'{"id": "a", "text": " \\n\\t\\u3000 "}', "empty_text"),
        (b'{"id": "a", "text": "b", "namespace": "a}"}', "invalid_namespace"),
        (b'{"id": "a", "text": "b", "namespace": 7}', "invalid_namespace"),
        (b'{"id": "a", "text": "b", "title": 7}', "invalid_field"),
        (b'{"id": "a", "text": "b", "url": ["x"]}', "invalid_field"),
    ]
    for raw, reason in cases:
        got = parse(raw)
        assert isinstance(got, InvalidMessage) and got.reason == reason, (raw, got)
    # past 64 bits orjson yields a float: the id is read again as written, never rounded
    big = parse(b'{"id": 27010134430496382976, "text": "b"}')
    assert isinstance(big, Article) and big.id == "27010134430496382976"
    too_long = dumps({"id": "a", "text": "x" * (LIMIT + 1)})
    assert isinstance(got := parse(too_long), InvalidMessage) and got.reason == "oversize"
    too_big = b" " * (2 * LIMIT + 65_537)
    assert isinstance(got := parse(too_big), InvalidMessage) and got.reason == "oversize"


# --------------------------------------------------------------------------- ids and namespaces

HOSTILE_NAMESPACES = [
    "",
    " ",
    "a b",
    "a}",
    "{a",
    "{b}",
    "a}:d",
    "a}{b",
    "nd:{b}:d",
    "a:b",
    "*",
    "a*",
    "?",
    "[ab]",
    "a\n",
    "\na",
    "a\r",
    "a\x00",
    "a/b",
    "x" * 65,
    "é",
    "\u0663",  # ARABIC-INDIC DIGIT THREE: \d would take it, the charset must not
    "\uff41",  # FULLWIDTH a: NFKC folds it to "a", the charset must not
    "\u212a",  # KELVIN SIGN: case-insensitive matching folds it to "k"
    "a\u200b",
    "\ud800",
]


@pytest.mark.parametrize("ns", HOSTILE_NAMESPACES)
def test_hostile_namespaces_are_refused_everywhere(ns: str) -> None:
    with pytest.raises(ValueError, match="namespace"):
        names.check_namespace(ns)
    got = from_obj({"id": "a", "text": "b", "namespace": ns})
    assert isinstance(got, InvalidMessage) and got.reason == "invalid_namespace"
    got = from_obj({"id": "a", "text": "b"}, default_namespace=ns)
    assert isinstance(got, InvalidMessage) and got.reason == "invalid_namespace"
    if "\ud800" not in ns:
        got = parse(dumps({"id": "a", "text": "b", "namespace": ns}))
        assert isinstance(got, InvalidMessage) and got.reason == "invalid_namespace"


def test_the_key_module_checks_names_by_the_namespace_rule() -> None:
    """One rule: the Redis key module's check is the namespaces module's, not a copy of it."""
    assert keys.check_namespace is names.check_namespace
    assert keys.NAMESPACE_RE is names.NAMESPACE_RE


@FAST
@given(st.one_of(st.text(max_size=70), st.text(string.printable, max_size=70), odd_text))
def test_namespace_accepted_iff_in_charset(ns: str) -> None:
    ok = NS_OK.fullmatch(ns) is not None
    assert (names.NAMESPACE_RE.fullmatch(ns) is not None) == ok
    got = from_obj({"id": "a", "text": "b", "namespace": ns})
    assert isinstance(got, Article) == ok
    if ok:
        assert names.check_namespace(ns) == ns


KEY_BUILDERS: list[Callable[[str], str]] = [
    keys.meta,
    keys.ids,
    keys.docs,
    keys.verdicts,
    keys.times,
    lambda ns: keys.exact_shard(ns, b"\xff" * 16, 24),
    lambda ns: keys.exact_shard(ns, b"\x00" * 16, 1),
    lambda ns: keys.bucket_shard(ns, 2**64 - 1, 24),
    lambda ns: keys.bucket_shard(ns, 0, 16),
]


@FAST
@given(st.from_regex(NS_OK, fullmatch=True))
def test_every_key_of_a_valid_namespace_has_exactly_its_own_tag(ns: str) -> None:
    """Redis Cluster hashes the text between the first ``{`` and the next ``}``: one pair only."""
    for build in KEY_BUILDERS:
        key = build(ns)
        assert key.startswith(f"nd:{{{ns}}}:")
        assert key.count("{") == 1 and key.count("}") == 1
        assert key[key.index("{") + 1 : key.index("}")] == ns


@pytest.mark.parametrize(
    ("doc_id", "ok"),
    [
        ("a", True),
        ("x}:d", True),  # ids are hash fields, never part of a key name
        ("{b}", True),
        ("*", True),
        ("nd:{b}:d", True),
        ("a b", True),
        ("x" * 512, True),
        ("x" * 513, False),
        ("é" * 256, True),  # 512 bytes
        ("é" * 256 + "x", False),  # 513 bytes, 257 characters
        ("\U0001f600" * 128, True),
        ("\U0001f600" * 128 + "x", False),
        ("a\nb", False),
        ("a\tb", False),
        ("a\x00", False),
        ("\x1b[31m", False),
        ("a\u2028", False),
        ("\u202eexe.txt", False),
        ("a\u200b", False),
        ("\ud800", False),
        ("a\udcff", False),
    ],
)
def test_ids_are_bounded_and_printable(doc_id: str, ok: bool) -> None:
    got = from_obj({"id": doc_id, "text": "b"})
    if ok:
        assert isinstance(got, Article) and got.id == doc_id
    else:
        assert isinstance(got, InvalidMessage) and got.reason == "invalid_id"


class SpyIndex:
    """A MemoryIndex that records the namespace of every call the engine makes."""

    remote = False
    round_trips = 0

    def __init__(self) -> None:
        self.inner = MemoryIndex()
        self.namespaces: list[str] = []

    def registration(self, ns: str, cap: int) -> BufferedRegistration:
        return BufferedRegistration(self, ns, cap)  # type: ignore[arg-type]  # its register is spied

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        async def call(ns: str, *args: Any, **kwargs: Any) -> Any:
            self.namespaces.append(ns)
            return await method(ns, *args, **kwargs)

        return call


@pytest.mark.parametrize("ns", HOSTILE_NAMESPACES)
async def test_engine_refuses_bad_namespaces_before_touching_the_index(ns: str) -> None:
    index = SpyIndex()
    engine = Engine(index)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace"):
        await engine.process([Article("a", "some text here", ns)])
    with pytest.raises(ValueError, match="namespace"):
        await engine.process([Article("a", "some text here", ns)], register=False)
    with pytest.raises(ValueError, match="namespace"):  # a good one first does not open the door
        await engine.process([Article("b", "other text", "good"), Article("a", "text", ns)])
    assert set(index.namespaces) <= {"good"}


# --------------------------------------------------------------------------- the engine


def _scripts() -> st.SearchStrategy[str]:
    ranges = {
        "latin": st.characters(min_codepoint=0x20, max_codepoint=0x24F),
        "cjk": st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
        "hangul": st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
        "kana": st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),
        "arabic": st.characters(min_codepoint=0x0600, max_codepoint=0x06FF),
        "devanagari": st.characters(min_codepoint=0x0900, max_codepoint=0x097F),
        "emoji": st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF),
        "punct": st.sampled_from(list(string.punctuation + "«»¿¡—–…·•※")),
        "control": st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"]),
        "combining": st.characters(categories=["Mn", "Me", "Mc"]),
        "any": st.characters(codec="utf-8"),
    }
    pure = [st.text(alphabet, min_size=1, max_size=300) for alphabet in ranges.values()]
    mixed = st.text(st.one_of(*ranges.values()), min_size=1, max_size=300)
    words = st.lists(st.text(ranges["latin"], min_size=1, max_size=8), max_size=80).map(" ".join)
    return st.one_of(*pure, mixed, words, st.sampled_from(ODD), odd_text)


engine_texts = _scripts().filter(lambda t: isinstance(from_obj({"id": "a", "text": t}), Article))
_ids = itertools.count()


def _run(engine: Engine, articles: Sequence[Article], register: bool = True) -> list[Verdict]:
    results = asyncio.run(engine.process(articles, register=register))
    assert len(results) == len(articles)
    for article, result in zip(articles, results, strict=True):
        if isinstance(result, InvalidMessage):  # only a text with nothing to read is refused
            assert result.reason == "empty_text" and not features.normalize(article.text)
            continue
        assert features.normalize(article.text) or "<" in article.text  # see shows_nothing
        assert isinstance(result, Verdict), result
        assert result.id == article.id and result.namespace == article.namespace
        assert result.verdict in {"original", "near_duplicate", "duplicate"}
        assert result.similarity is None or 0.0 <= result.similarity <= 1.0
    return [r for r in results if isinstance(r, Verdict)]


@SLOW
@given(engine_texts)
def test_engine_never_crashes_and_catches_a_verbatim_copy(text: str) -> None:
    engine = Engine(MemoryIndex())
    first = Article(f"t{next(_ids)}", text, "fuzz")
    if not _run(engine, [first], register=False):  # nothing to read: refused, never a copy
        assert not _run(engine, [first]) and not _run(engine, [Article("u", text, "fuzz")])
        return
    (checked,) = _run(engine, [first], register=False)
    assert checked.verdict == "original" and checked.seq is None
    (original,) = _run(engine, [first])
    assert original.verdict == "original"
    (replayed,) = _run(engine, [first])
    assert replayed == original
    (copy,) = _run(engine, [Article(f"t{next(_ids)}", text, "fuzz")])
    assert copy.verdict == "duplicate" and copy.duplicate_of == first.id
    assert copy.cluster == first.id


@SLOW
@given(st.lists(engine_texts, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_engine_batches_of_hostile_texts(texts: list[str], rnd: Any) -> None:
    engine = Engine(MemoryIndex())
    firsts = [Article(f"b{next(_ids)}", t, rnd.choice(["a", "b"])) for t in texts]
    articles = firsts + [Article(f"b{next(_ids)}", a.text, a.namespace) for a in firsts]
    rnd.shuffle(articles)
    verdicts = _run(engine, articles)
    by_ns: Mapping[str, set[str]] = {
        ns: {a.id for a in articles if a.namespace == ns} for ns in ("a", "b")
    }
    for v in verdicts:
        assert v.duplicate_of is None or v.duplicate_of in by_ns[v.namespace]
        assert {m.id for m in v.matches} <= by_ns[v.namespace]


def test_spy_index_is_faithful() -> None:
    """The spy forwards every index call; a guard that the namespace assertion above can fail."""
    index = SpyIndex()
    _run(Engine(index), [Article("a", "some text", "good")])  # type: ignore[arg-type]
    assert index.namespaces and set(index.namespaces) == {"good"}
