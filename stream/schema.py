"""Input validation: raw message bytes -> :class:`~neardup.stream.model.Article`, or a reason why
not.

Input is a JSON object: ``id`` (string, required; an integer is accepted as the exact text of
its number, :func:`exact_id`),
``text`` (string, required, non-empty), optional ``title``, ``namespace``, ``url``, ``lang``,
``published_at``, ``source`` (strings; ``source``, else the host of ``url``, names whose
boilerplate a page carries), ``format`` (``"html"``: its visible text, ``"page"``: a whole
web page, its main content, ``"text"``: never read as markup; absent or null: markup is read
where the text carries evidence of it).
Every rejection carries a short machine-readable ``reason`` (for the dead-letter topic and
metrics) and a human message: an :class:`~neardup.stream.errors.InvalidMessage`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson

from neardup.sketch import canonical
from neardup.stream import extract
from neardup.stream.errors import InvalidMessage
from neardup.stream.model import ID_MAX_BYTES, Article
from neardup.stream.names import NAMESPACE_RE

MAX_TEXT_BYTES = 1_000_000
MAX_KEY_BYTES = 1024
"""Longest Kafka key accepted on the input topic; a longer one is a dead letter ``oversize_key``
(an article id is at most ``ID_MAX_BYTES``, so no valid key comes close)."""
OPTIONAL_FIELDS = ("title", "url", "lang", "published_at", "source")
FORMATS = (*canonical.FORMATS, "page")


def parse_article(
    raw: bytes | str,
    *,
    default_namespace: str = "default",
    id_field: str = "id",
    text_field: str = "text",
    max_text_bytes: int = MAX_TEXT_BYTES,
) -> Article:
    """Validate one message; raise :class:`InvalidMessage` with the reason."""
    if isinstance(raw, bytes) and len(raw) > max_text_bytes * 2 + 65536:
        raise InvalidMessage("oversize", f"message of {len(raw)} bytes is too large")
    try:
        # orjson reads the bytes as they came: decoding them to a str first cost a copy of the
        # text, and orjson then encoded that str back to UTF-8 to read it
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if isinstance(raw, bytes):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                raise InvalidMessage("invalid_utf8", f"message is not valid UTF-8: {bad}") from None
        raise InvalidMessage("invalid_json", f"message is not JSON: {exc}") from None
    return article_from_obj(
        obj,
        default_namespace=default_namespace,
        id_field=id_field,
        text_field=text_field,
        max_text_bytes=max_text_bytes,
        read_from=len(raw) if isinstance(raw, bytes) else None,
        raw=raw,
    )


def article_from_obj(
    obj: Any,
    *,
    default_namespace: str = "default",
    id_field: str = "id",
    text_field: str = "text",
    max_text_bytes: int = MAX_TEXT_BYTES,
    default_format: str | None = None,
    read_from: int | None = None,
    raw: bytes | str | None = None,
) -> Article:
    """An :class:`Article` from a decoded message; ``default_format``: the format of a message
    that declares none. ``read_from``: the size in bytes of the JSON message orjson read it
    from, when it did: a string orjson reads holds no lone surrogate and takes no more UTF-8
    bytes than its JSON did (an escape never grows), so a message within the limit is not
    measured again (encoding a text of Greek or Chinese to count its bytes cost more than
    orjson's reading of it). ``raw``: that JSON message, where a numeric id's text is read
    (:func:`exact_id`)."""
    if not isinstance(obj, dict):
        raise InvalidMessage("not_object", f"expected a JSON object, got {type(obj).__name__}")
    doc_id = obj.get(id_field)
    doc_id = check_id(doc_id, id_field) if type(doc_id) is str else exact_id(doc_id, id_field, raw)
    text = obj.get(text_field)
    if not isinstance(text, str):
        raise InvalidMessage("missing_text", f"field {text_field!r} must be a string")
    if read_from is None or read_from > max_text_bytes:
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidMessage("invalid_utf8", "text contains unpaired surrogates") from None
        if size > max_text_bytes:
            raise InvalidMessage("oversize", f"text of {size} bytes exceeds {max_text_bytes}")
    # a text with a letter at either end is not empty: isspace() reads a text whole only when
    # both ends are white space (strip() copied every text that opened with a space)
    if not text or (text[0].isspace() and text[-1].isspace() and text.isspace()):
        raise InvalidMessage("empty_text", "text is empty")
    ns = obj.get("namespace", default_namespace)
    if ns is None:
        ns = default_namespace
    if not isinstance(ns, str) or not NAMESPACE_RE.fullmatch(ns):
        raise InvalidMessage("invalid_namespace", f"namespace must match {NAMESPACE_RE.pattern}")
    extra: dict[str, str | None] = {}
    for name in OPTIONAL_FIELDS:
        value = obj.get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidMessage("invalid_field", f"field {name!r} must be a string or null")
        extra[name] = value
    declared = obj.get("format", default_format)
    if declared is None:
        declared = default_format
    if declared is not None and declared not in FORMATS:
        raise InvalidMessage("invalid_field", f"format must be one of {', '.join(FORMATS)} or null")
    if declared == "page" and not extract.available():
        raise InvalidMessage(
            "invalid_field",
            f"format 'page' needs trafilatura on this worker: {extract.INSTALL_HINT}",
        )
    return Article(doc_id, text, ns, **extra, format=declared)


_JSON_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
BAD_NUMBER_ID = (
    "an id number must be an integer as JSON writes it (1000, not 1e3, 1000.0 or -0);"
    " send any other id as a string"
)


class _Written(str):
    """A JSON number as its message wrote it (:func:`_number_text`)."""

    __slots__ = ()


def exact_id(value: object, field: str = "id", raw: bytes | str | None = None) -> str:
    """An article id from a message's ``field``: a string as it is, a JSON integer as the exact
    text of its number, or :class:`InvalidMessage` (``invalid_id``, ``missing_id``).

    Two different id texts never become one id: a number with a fraction or an exponent
    (``1.0``, ``1e3``) or ``-0`` would read as the integer another text names, and is refused;
    an integer past 64 bits, which orjson reads as a rounded float, is read again from ``raw``,
    the message as sent, and kept exactly (without ``raw`` it is refused, never rounded). A
    Python int (a caller's dict, a Parquet integer column) is its decimal text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return check_id(value, field)
    if isinstance(value, int) and (value != 0 or raw is None or not _may_hold(raw, b"-0")):
        # More than 4 bits a digit: a longer int cannot fit ID_MAX_BYTES, and str() of a huge
        # int is slow or refused outright (ValueError past sys.get_int_max_str_digits()).
        if abs(value).bit_length() > 4 * ID_MAX_BYTES:
            raise InvalidMessage("invalid_id", f"id must be at most {ID_MAX_BYTES} bytes")
        return check_id(str(value), field)
    # a float (a fraction, an exponent, or an integer past 64 bits), or a 0 that may be -0; a
    # float under 2**63 was written with a fraction or an exponent (orjson reads every integer
    # of 64 bits as an int): refused without reading the message again
    may_be_integer = isinstance(value, int) or not abs(value) < 2**63
    written = _number_text(raw, field) if raw is not None and may_be_integer else None
    if written is None or written == "-0" or not _JSON_INTEGER.fullmatch(written):
        raise InvalidMessage("invalid_id", BAD_NUMBER_ID)
    return check_id(str(written), field)


def _may_hold(raw: bytes | str, part: bytes) -> bool:
    return part in raw if isinstance(raw, bytes) else part.decode() in raw


def _number_text(raw: bytes | str, field: str) -> str | None:
    """The text of the number a JSON object's ``field`` holds, as written, or None. Read with
    the standard library's parser, which hands each number over as its text (orjson gives only
    the value): a slower second reading, made only for an id orjson read as a float past 2**63
    or as 0."""
    try:
        obj = json.loads(raw, parse_int=_Written, parse_float=_Written)
    except (ValueError, RecursionError):
        return None
    value = obj.get(field) if isinstance(obj, dict) else None
    return value if isinstance(value, _Written) else None


def check_id(doc_id: object, field: str = "id") -> str:
    """A valid article id (printable, at most ``ID_MAX_BYTES``), or InvalidMessage."""
    if not isinstance(doc_id, str) or not doc_id:
        raise InvalidMessage("missing_id", f"field {field!r} must be a non-empty string")
    if len(doc_id.encode("utf-8", "surrogatepass")) > ID_MAX_BYTES or not doc_id.isprintable():
        raise InvalidMessage("invalid_id", f"id must be printable and at most {ID_MAX_BYTES} bytes")
    return doc_id


def parse_tombstone(
    key: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
    default_namespace: str = "default",
) -> tuple[str, str]:
    """``(namespace, id)`` of a tombstone: the key is the id, the namespace is the last
    ``namespace`` header (UTF-8) or the default. A keyless tombstone is ``empty_message``."""
    if not key:
        raise InvalidMessage("empty_message", "message has no value and no key")
    try:
        doc_id = key.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidMessage("invalid_id", "tombstone key is not UTF-8") from None
    ns = default_namespace
    for name, value in headers:
        if name == "namespace":
            try:
                ns = (value or b"").decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidMessage("invalid_namespace", "namespace header is not UTF-8") from None
    if not NAMESPACE_RE.fullmatch(ns):
        raise InvalidMessage("invalid_namespace", f"namespace must match {NAMESPACE_RE.pattern}")
    return ns, check_id(doc_id, "key")


__all__ = [
    "BAD_NUMBER_ID",
    "FORMATS",
    "MAX_KEY_BYTES",
    "MAX_TEXT_BYTES",
    "OPTIONAL_FIELDS",
    "article_from_obj",
    "check_id",
    "exact_id",
    "parse_article",
    "parse_tombstone",
]
