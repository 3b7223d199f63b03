"""The HTTP API's models: the rules they validate with are the ones they state to JSON Schema,
the OpenAPI document built from them is valid OpenAPI 3.1, and the answers the service gives
(verdicts as published, the read API's views) are exactly what the models say."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from openapi_spec_validator import validate as validate_openapi
from pydantic import BaseModel

from neardup.stream.engine.engine import Engine
from neardup.stream.errors import InvalidMessage
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article
from neardup.stream.schema import check_id
from neardup.stream.worker.http import api_models, read_api

GOLDEN = Path(__file__).parents[3] / "golden"


def _accepted(doc_id: str) -> bool:
    try:
        check_id(doc_id)
    except InvalidMessage:
        return False
    return True


ID_SCHEMA = api_models.ArticlePath.model_json_schema()["properties"]["doc_id"]
ID_VALIDATOR = jsonschema_rs.validator_for(ID_SCHEMA)

# any character a UTF-8 client can send: every category, controls and format characters too
ids = st.text(st.characters(codec="utf-8"), min_size=0, max_size=128)


@given(ids)
@example("新闻-1")  # an id in Chinese: what the hand-written pattern refused
@example("статья е")  # Cyrillic, with a space
@example("a\u200bb")  # a zero-width space (format, Cf): not printable
@example("a\u2028b")  # a line separator (Zl)
@example("\U0001f600")  # past the BMP
@example("\U000e0001")  # a language tag (Cf, past the BMP)
@example("\U0010ffff")  # a noncharacter
@example("a\x85")  # NEL, a C1 control
def test_the_documented_id_pattern_is_the_services_rule(doc_id: str) -> None:
    """Up to 128 characters (at most 512 bytes, the byte limit cannot bite): the document's
    pattern, read by Python's re and by the Rust validator schemathesis uses, accepts exactly
    the ids the service takes."""
    rule = _accepted(doc_id)
    assert bool(re.fullmatch(api_models.printable_pattern(), doc_id)) == rule
    assert ID_VALIDATOR.is_valid(doc_id) == rule


def test_the_byte_limit_is_the_rules() -> None:
    assert _accepted("é" * 256) and not _accepted("é" * 257)  # 2 bytes each
    with pytest.raises(InvalidMessage, match="512 bytes"):
        api_models.validate(api_models.ArticlePath, {"doc_id": "é" * 257})


@pytest.mark.parametrize(
    ("body", "reason", "words"),
    [
        ({"text": "x", "regster": True}, "unknown_field", "'regster'; known: format, id"),
        ({}, "missing_text", "text"),
        ({"text": 3}, "missing_text", "valid string"),
        ({"text": " \x1c\x85 "}, "empty_text", "empty"),
        ({"text": "x", "id": ""}, "missing_id", "non-empty"),
        ({"text": "x", "id": "a\x00"}, "invalid_id", "printable"),
        ({"text": "x", "id": True}, "invalid_id", "a string or an integer"),
        # a number that would read as another text's integer is no id (7.0 is not "7")
        ({"text": "x", "id": 7.5}, "invalid_id", "an integer as JSON writes it"),
        ({"text": "x", "id": 7.0}, "invalid_id", "an integer as JSON writes it"),
        ({"text": "x", "id": 2.0**64}, "invalid_id", "an integer as JSON writes it"),
        ({"text": "x", "register": True}, "missing_id", "registering needs"),
        ({"text": "x", "register": True, "id": None}, "missing_id", "registering needs"),
        ({"text": "x", "register": "yes"}, "invalid_field", "'register'"),
        ({"text": "x", "namespace": "a b"}, "invalid_namespace", "must match"),
        ({"text": "x", "format": "pdf"}, "invalid_field", "'format'"),
        ({"text": "x", "title": 3}, "invalid_field", "'title'"),
        # the first failing field names the error, in the order the checks run
        ({"text": "", "id": "a\x00"}, "invalid_id", "printable"),
        ({"text": "", "register": 1}, "invalid_field", "'register'"),
    ],
)
def test_a_refused_check_names_its_reason(body: dict[str, Any], reason: str, words: str) -> None:
    with pytest.raises(InvalidMessage) as got:
        api_models.validate(api_models.CheckRequest, body)
    assert got.value.reason == reason and words in str(got.value)


@pytest.mark.parametrize(
    ("body", "doc_id"),
    [
        ({"text": "x"}, None),
        ({"text": "x", "id": None}, None),  # null is as if absent: a check's throwaway id
        ({"text": "x", "id": 7}, "7"),
        ({"text": "x", "id": -(2**63)}, str(-(2**63))),
        ({"text": "x", "id": 2**64 - 1, "register": True}, str(2**64 - 1)),
        ({"text": "x", "id": -(2**63) - 1}, str(-(2**63) - 1)),  # a Python int is exact
        ({"text": "x", "id": "新闻-1", "namespace": None, "format": None}, "新闻-1"),
    ],
)
def test_an_accepted_check_reads_its_id(body: dict[str, Any], doc_id: str | None) -> None:
    assert api_models.validate(api_models.CheckRequest, body).id == doc_id


def test_the_query_models() -> None:
    q = api_models.validate(api_models.ClusterQuery, {"offset": "5"})
    assert (q.namespace, q.offset, q.limit) == ("", 5, 50)
    for bad, reason in (
        ({"limit": "0"}, "invalid_field"),
        ({"limit": str(api_models.MAX_PAGE + 1)}, "invalid_field"),
        ({"offset": "x"}, "invalid_field"),
        ({"namespace": "a b"}, "invalid_namespace"),
    ):
        with pytest.raises(InvalidMessage) as got:
            api_models.validate(api_models.ClusterQuery, bad)
        assert got.value.reason == reason, bad


def test_the_document_is_valid_openapi_and_built_from_the_models() -> None:
    doc = read_api.openapi(bearer=True)
    validate_openapi(doc)
    validate_openapi(read_api.openapi(bearer=False))
    schemas = doc["components"]["schemas"]
    assert schemas["CheckRequest"] == api_models.CheckRequest.model_json_schema()
    body = doc["paths"]["/check"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/CheckRequest"}
    params = {p["name"]: p for p in doc["paths"]["/clusters/{doc_id}"]["get"]["parameters"]}
    assert params["doc_id"]["schema"]["pattern"] == api_models.printable_pattern()
    assert params["limit"]["schema"]["maximum"] == api_models.MAX_PAGE
    assert set(params) == {"doc_id", "namespace", "offset", "limit"}
    again = read_api.openapi(bearer=True)
    assert doc == again and doc is not again  # a fresh copy each time


def _exactly(model: type[BaseModel], body: Any) -> None:
    """``body`` is what ``model`` says: validated strictly (no field beyond the model's, none
    missing, no coercion) and dumped back unchanged."""
    got = model.model_validate(body, strict=True)
    assert orjson.loads(got.model_dump_json(exclude_unset=True)) == orjson.loads(orjson.dumps(body))


@pytest.mark.parametrize("name", ["sample.verdicts.jsonl.gz", "corpus.verdicts.jsonl.gz"])
def test_every_golden_verdict_is_a_verdict_out(name: str) -> None:
    with gzip.open(GOLDEN / name, "rt", encoding="utf-8") as fh:
        lines = [orjson.loads(line) for line in fh if line.strip()]
    assert lines
    for v in lines:
        _exactly(api_models.VerdictOut, v)


STORY = " ".join(f"w{i}" for i in range(120))


async def test_the_read_views_answer_as_their_models() -> None:
    index = MemoryIndex()
    times = iter([1.0, 2.0, 3.0, 4.0])
    engine = Engine(index, clock=lambda: next(times))
    for a in (
        Article("a", STORY, "news"),
        Article("b", STORY + " with 3 more words", "news"),
        Article("c", STORY, "news"),
        Article("d", "a 12 word fact of 2024 that differs from its sibling in one number", "news"),
    ):
        await engine.process([a], explain=True)
    for doc_id in "abcd":
        _exactly(api_models.ArticleOut, await read_api.article(index, "news", doc_id))
    _exactly(api_models.ClusterOut, await read_api.cluster(index, "news", "a", 0, 2))
    _exactly(api_models.ClusterOut, await read_api.cluster(index, "news", "a", 2, 2))
    _exactly(api_models.NamespacesOut, await read_api.namespaces(index))


async def test_a_check_answer_is_a_check_out() -> None:
    index = MemoryIndex()
    engine = Engine(index)
    await engine.process([Article("a", STORY, "news")])
    (v,) = await engine.process(
        [Article("b", STORY + " and 4 words", "news")], register=False, explain=True
    )
    assert not isinstance(v, Exception)
    out = {**v.to_dict(), "registered": False, "namespace_known": True}
    _exactly(api_models.CheckOut, out)
    with pytest.raises(ValueError, match="extra"):
        api_models.CheckOut.model_validate({**out, "surprise": 1})


@pytest.mark.parametrize(
    "body",
    [
        {"text": "x", "register": True},
        {"text": "x", "register": True, "id": None},
        {"text": "x", "id": 7.5},
        {"text": " "},
        {"text": "x", "namespace": "a b"},
        {"text": "x", "extra": 1},
    ],
)
def test_what_the_model_refuses_the_document_refuses(body: dict[str, Any]) -> None:
    """The /check body's JSON Schema, as the document states it, refuses what validation
    refuses (schemathesis sends only what the document allows)."""
    with pytest.raises(InvalidMessage):
        api_models.validate(api_models.CheckRequest, body)
    assert not jsonschema_rs.validator_for(CHECK_SCHEMA).is_valid(body)


CHECK_SCHEMA = api_models.CheckRequest.model_json_schema()
