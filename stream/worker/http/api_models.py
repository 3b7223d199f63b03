"""The HTTP API's requests and answers as pydantic models: the views validate with them and the
OpenAPI document (:mod:`neardup.stream.worker.http.read_api`) is generated from them, so the two
cannot drift.

The rules themselves stay where the stream uses them (:func:`neardup.stream.schema.check_id`,
``neardup.stream.names.NAMESPACE_RE``); a field here calls the rule to validate
and states it to JSON Schema beside it. An article id's rule is "printable
(``str.isprintable``), at most ``keys.ID_MAX_BYTES`` UTF-8 bytes": its pattern is built from
the same Unicode data ``isprintable`` reads, so an id in any script is documented as the
service takes it.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from neardup.sketch.facts import FactKind
from neardup.stream import names
from neardup.stream.errors import InvalidMessage
from neardup.stream.index.redis import keys
from neardup.stream.model import Direction, Method, VerdictKind
from neardup.stream.schema import FORMATS, OPTIONAL_FIELDS, check_id, exact_id

MAX_PAGE = 500
MAX_OFFSET = 10**9


def _char(c: int) -> str:
    # \uXXXX reads the same in ECMA-262, Python's re and Rust's regex; a character past the BMP
    # is written as itself (a JSON string carries it as UTF-8)
    return f"\\u{c:04X}" if c < 0x10000 else chr(c)


@functools.cache
def printable_pattern() -> str:
    """A JSON Schema pattern for one or more characters that ``str.isprintable`` accepts, as
    ranges computed from this Python's Unicode data (no surrogates: they are not printable)."""
    ranges: list[str] = []
    start: int | None = None
    for c in range(sys.maxunicode + 2):
        ok = c <= sys.maxunicode and chr(c).isprintable()
        if ok and start is None:
            start = c
        elif not ok and start is not None:
            end = c - 1
            ranges.append(_char(start) if start == end else f"{_char(start)}-{_char(end)}")
            start = None
    return f"^[{''.join(ranges)}]+$"


def _id_schema() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        # bytes, not characters, are the limit: 512 characters is the most any id can have
        "maxLength": keys.ID_MAX_BYTES,
        "pattern": printable_pattern(),
        "description": f"printable characters, at most {keys.ID_MAX_BYTES} bytes of UTF-8",
    }


def _valid_id(value: str) -> str:
    return check_id(value)


ArticleId = Annotated[str, AfterValidator(_valid_id), WithJsonSchema(_id_schema())]
"""An article id as a string: a path parameter, a verdict's id."""


def _whole(value: object) -> str:
    # the view reads a number's text from the body first (schema.exact_id): a number met here
    # has no text, and only an integer's decimal text is exact
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    return exact_id(value)


WholeId = Annotated[
    str,
    BeforeValidator(_whole),
    WithJsonSchema(
        {
            "type": "integer",
            "description": 'kept as the exact text of the number: 42 is the id "42"; a'
            " number with a fraction or an exponent (1.0, 1e3) or -0 is refused (400, invalid_id)",
        }
    ),
]
"""An article id sent as a JSON integer, read as the exact text of its number."""


def _valid_namespace(value: str) -> str:
    if not names.NAMESPACE_RE.fullmatch(value):
        raise InvalidMessage(
            "invalid_namespace", f"namespace must match {names.NAMESPACE_RE.pattern}"
        )
    return value


Namespace = Annotated[
    str,
    AfterValidator(_valid_namespace),
    WithJsonSchema({"type": "string", "pattern": names.NAMESPACE_RE.pattern}),
]

# a character neither JSON Schema's \s nor Python's whitespace (\x1c-\x1f, \x85)
_NOT_BLANK = "[^\\s\\x1c-\\x1f\\x85]"


def _not_blank(value: str) -> str:
    if not value.strip():
        raise InvalidMessage("empty_text", "text is empty")
    return value


Text = Annotated[
    str,
    AfterValidator(_not_blank),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "pattern": _NOT_BLANK,
            "description": "not blank; over the body limit the request is refused (413)",
        }
    ),
]


class CheckRequest(BaseModel):
    """``POST /check``: the article's fields and ``register``. Registering needs the article's
    own id; a check without one gets a throwaway id. An unknown field is refused, naming it (a
    misspelt ``"regster": true`` must not pass for a read-only check)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "if": {"properties": {"register": {"const": True}}, "required": ["register"]},
            # ... and not null (null is as if absent: a throwaway id for a check)
            "then": {"required": ["id"], "properties": {"id": {"type": ["string", "integer"]}}},
        },
    )

    # in the order the checks run: the first field that fails names the error
    register_: bool = Field(False, alias="register")
    id: ArticleId | WholeId | None = None
    text: Text
    namespace: Namespace | None = None
    title: str | None = None
    url: str | None = None
    lang: str | None = None
    published_at: str | None = None
    source: str | None = None
    format: Literal[FORMATS] | None = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _registering_names_the_article(self) -> CheckRequest:
        if self.register_ and self.id is None:
            raise InvalidMessage("missing_id", "registering needs the article's id")
        return self


CHECK_FIELDS = frozenset(f.alias or name for name, f in CheckRequest.model_fields.items())
assert set(OPTIONAL_FIELDS) <= CHECK_FIELDS, "every optional field of an article is a field"


def _query_namespace(value: str) -> str:
    return value and _valid_namespace(value)


QueryNamespace = Annotated[
    str,
    AfterValidator(_query_namespace),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": f"^({names.NAMESPACE_RE.pattern.strip('^$')})?$",
            "description": "empty or absent: the worker's NEARDUP_NAMESPACE",
        }
    ),
]


class ArticlePath(BaseModel):
    """The article (or cluster, named by its original) a path names: any id, percent-encoded."""

    doc_id: ArticleId


class ArticleQuery(BaseModel):
    """``GET``/``DELETE /articles/{id}``'s query."""

    namespace: QueryNamespace = ""


class ClusterQuery(ArticleQuery):
    """``GET /clusters/{id}``'s query: a page of members."""

    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    limit: int = Field(50, ge=1, le=MAX_PAGE)


# --------------------------------------------------------------------------------- the answers


class _Out(BaseModel):
    """An answer: exactly these fields (a test holds the views to it), no others."""

    model_config = ConfigDict(extra="forbid")


class ChangeOut(_Out):
    """A fact that differs: what the earlier text says and what this one says (null: nothing)."""

    kind: FactKind
    earlier: str | None
    now: str | None


class MatchOut(_Out):
    id: str
    similarity: float


class RelatedOut(_Out):
    """An earlier text that reads alike but states other facts, or (with ``direction``) one that
    lies inside this text or holds it although the two are unlike as wholes; never in the
    cluster."""

    id: str
    similarity: float
    changes: list[ChangeOut]
    # only when one text lies inside the other: ``embeds`` (this text holds the earlier one),
    # ``excerpt`` (it lies inside the earlier one); ``similarity`` is then the share of the
    # smaller text's shingles found in the larger
    direction: Direction | None = None


class EvidenceOut(_Out):
    """A passage shared with ``duplicate_of``: character offsets into both texts as sent."""

    start: int
    end: int
    earlier_start: int
    earlier_end: int
    share: float


class VerdictOut(_Out):
    """A verdict as the stream publishes it (:mod:`neardup.stream.model`, ``Verdict.to_dict``)."""

    id: str
    namespace: str
    verdict: VerdictKind
    duplicate_of: str | None
    cluster: str
    similarity: float | None
    matches: list[MatchOut]
    method: Method
    seq: int | None
    changes: list[ChangeOut]
    related: list[RelatedOut]
    direction: Direction | None
    evidence: list[EvidenceOut] | None


class CheckOut(VerdictOut):
    """``POST /check``'s answer: the verdict, whether it was registered and, for a check that
    does not register, whether the namespace held anything to compare with."""

    registered: bool
    namespace_known: bool | None = None
    note: str | None = None


class ArticleOut(_Out):
    id: str
    namespace: str
    seq: int
    cluster: str | None
    registered_at: float
    verdict: VerdictOut | None
    text: str | None = Field(description="the text as sent, when the namespace keeps text")


class Member(_Out):
    id: str
    seq: int
    registered_at: float
    verdict: VerdictOut | None


class ClusterOut(_Out):
    cluster: str
    namespace: str
    size: int
    first_seen: float | None
    last_seen: float | None
    members: list[Member]
    next_offset: int | None


class NamespaceRow(_Out):
    namespace: str
    serves: list[str] = Field(description="the names whose articles these keys hold")
    rebuilt_into: str | None
    documents: int
    copies: int
    clusters: int
    verdicts: int
    line_keys: int
    bytes: int | None
    hot_buckets: int | None
    estimated_from_shards: int | None
    shards: int | None
    shard_groups: int = Field(
        1, description="the slots its buckets are spread over (1: one slot; policy shards)"
    )
    scheme: str | None
    policy: str | None


class NamespacesOut(_Out):
    namespaces: list[NamespaceRow]


class DeleteOut(_Out):
    deleted: bool = Field(description="false: the id was not indexed (a tombstone goes out still)")
    id: str
    namespace: str


class Health(_Out):
    ready: bool
    redis: bool
    kafka: bool
    reason: str | None


class Live(_Out):
    live: bool = Field(description="always true: an answer at all is the news")


class ErrorOut(BaseModel):
    """Every error answer: a machine-readable reason and a human detail."""

    model_config = ConfigDict(extra="allow")

    error: str
    detail: Any = None


# ------------------------------------------------------------------------ validating with them

_REASON_OF_FIELD = {"text": "missing_text", "id": "invalid_id", "namespace": "invalid_namespace"}


def invalid(exc: ValidationError, model: type[BaseModel]) -> InvalidMessage:
    """The :class:`InvalidMessage` a failed validation means: the rule's own when a field's
    rule refused it, an unknown field named, else the field's reason with pydantic's words."""
    errors = exc.errors()
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        known = ", ".join(sorted(f.alias or n for n, f in model.model_fields.items()))
        return InvalidMessage(
            "unknown_field", f"unknown field(s) {', '.join(map(repr, unknown))}; known: {known}"
        )
    first = errors[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    for e in errors:  # the first field's own rule, for any member of a union
        own = (e.get("ctx") or {}).get("error")
        if isinstance(own, InvalidMessage) and (str(e["loc"][0]) if e["loc"] else "") == field:
            return own
    if field == "id" and first["type"] == "missing":
        return InvalidMessage("missing_id", "field 'id' is required")
    reason = _REASON_OF_FIELD.get(field, "invalid_field")
    if field == "id":  # a union: say what an id may be, not each member's complaint
        return InvalidMessage(reason, "field 'id' must be a string or an integer")
    return InvalidMessage(reason, f"field {field!r}: {first['msg']}")


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any) -> M:
    """``model`` validated from ``data``, or the :class:`InvalidMessage` why not."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(exc, model) from None


__all__ = [
    "CHECK_FIELDS",
    "ArticleId",
    "ArticleOut",
    "ArticlePath",
    "ArticleQuery",
    "ChangeOut",
    "CheckOut",
    "CheckRequest",
    "ClusterOut",
    "ClusterQuery",
    "DeleteOut",
    "ErrorOut",
    "EvidenceOut",
    "Health",
    "Live",
    "MatchOut",
    "Member",
    "NamespaceRow",
    "NamespacesOut",
    "RelatedOut",
    "VerdictOut",
    "invalid",
    "printable_pattern",
    "validate",
]
