"""The chart's per-namespace policies (values ``namespaces``), checked against the worker.

The chart renders the map as the TOML file ``neardup.stream.namespaces.policies`` reads; these tests
parse what helm renders with ``tomllib`` and with the worker's own parser, so a value the chart
writes in a form the worker would refuse (``3.0`` for a count, ``1e+06``, an unquoted dotted name)
fails here rather than as a crash loop. What the worker refuses, the chart's schema refuses before
anything is deployed.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from test_deploy import (
    ROOT,
    manifests,
    mounted_files,
    one,
    refused,
    settings_from,
    worker_container,
    worker_settings,
)

from neardup.stream.namespaces import policies as namespaces
from neardup.stream.namespaces.policy import Policy

# Every kind of value a namespace takes: strings, fractions, whole numbers written as floats by
# YAML and JSON, a count above 999999 (Go's %v would print 1e+06), booleans; names with a dot
# (a bare TOML key would nest it) and a dash.
NAMESPACES: dict[str, dict[str, Any]] = {
    "wire": {"measure": "containment", "threshold": 0.6, "retention_s": 86400},
    "news.fr-ca": {
        "short_threshold": 0.85,
        "facts": "relaxed",
        "keep_text": False,
        "explain": True,
        "threshold": 1,
        "boilerplate_lines": 1_000_000,
        "boilerplate_min_docs": 0,
        "facts_tokens": 0,
    },
    "empty": {},
}
FILE = "/etc/neardup/namespaces/namespaces.toml"


def rendered_file(**values: Any) -> str:
    docs = manifests(**values)
    path = worker_settings(docs)["NEARDUP_NAMESPACES_FILE"]
    return mounted_files(docs)[path]


def pod_annotations(docs: list[dict[str, Any]]) -> dict[str, str]:
    annotations: dict[str, str] = one(docs, "Deployment")["spec"]["template"]["metadata"][
        "annotations"
    ]
    return annotations


def test_namespaces_render_to_a_file_the_worker_accepts() -> None:
    docs = manifests(namespaces=NAMESPACES)
    assert worker_settings(docs)["NEARDUP_NAMESPACES_FILE"] == FILE
    mount = {m["mountPath"]: m for m in worker_container(docs)["volumeMounts"]}
    assert mount[str(Path(FILE).parent)]["readOnly"] is True
    text = mounted_files(docs)[FILE]
    assert tomllib.loads(text) == {"namespace": NAMESPACES}  # values and their TOML types
    types = {k: type(v) for t in tomllib.loads(text)["namespace"].values() for k, v in t.items()}
    assert types["boilerplate_lines"] is int and types["keep_text"] is bool
    default = Policy()
    assert namespaces.parse(text, default) == {
        "wire": Policy(measure="containment", threshold=0.6, retention_s=86400.0),
        "news.fr-ca": Policy(
            short_threshold=0.85,
            facts="relaxed",
            keep_text=False,
            explain=True,
            threshold=1.0,
            boilerplate_lines=1_000_000,
            boilerplate_min_docs=0,
            facts_tokens=0,
        ),
        "empty": default,
    }


def test_namespaces_override_the_charts_defaults_in_the_worker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Settings() with the chart's environment and its rendered file: a namespace takes its
    table's values and similarity.* for the rest, as the worker will at start."""
    docs = manifests(
        similarity={"facts": "relaxed", "explain": True, "boilerplate": {"minDocs": 5}},
        namespaces={"wire": {"measure": "containment", "threshold": 0.6}},
    )
    env = {k: v for k, v in worker_settings(docs).items() if k.startswith("NEARDUP_")}
    local = tmp_path / "namespaces.toml"
    local.write_text(mounted_files(docs)[env["NEARDUP_NAMESPACES_FILE"]])
    settings = settings_from({**env, "NEARDUP_NAMESPACES_FILE": str(local)}, monkeypatch)
    default = Policy(facts="relaxed", explain=True, boilerplate_min_docs=5)
    assert settings.policy() == default
    wire = dataclasses.replace(default, measure="containment", threshold=0.6)
    assert settings.policies() == {"wire": wire}


def test_no_namespaces_no_file() -> None:
    docs = manifests()
    assert "NEARDUP_NAMESPACES_FILE" not in worker_settings(docs)
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"] == ["neardup"]
    assert mounted_files(docs) == {}
    assert "checksum/namespaces" not in pod_annotations(docs)


def test_a_changed_policy_restarts_the_workers() -> None:
    before = pod_annotations(manifests(namespaces={"wire": {"threshold": 0.6}}))
    after = pod_annotations(manifests(namespaces={"wire": {"threshold": 0.7}}))
    assert before["checksum/namespaces"] != after["checksum/namespaces"]


def test_schema_knows_every_setting_a_namespace_takes() -> None:
    """The schema's settings of a namespace are the worker's, each with the Policy's type."""
    schema = json.loads((ROOT / "helm" / "neardup" / "values.schema.json").read_text())
    definitions = schema["definitions"]
    fields = definitions["namespacePolicy"]["properties"]
    assert set(fields) == set(namespaces.SETTABLE)
    json_type = {bool: "boolean", int: "integer", float: "number"}
    for name, spec in fields.items():
        spec = definitions[spec["$ref"].rsplit("/", 1)[-1]] if "$ref" in spec else spec
        if "anyOf" in spec:  # a number, or its decimal string (helm --set): the number's type
            spec = spec["anyOf"][0]
            spec = definitions[spec["$ref"].rsplit("/", 1)[-1]] if "$ref" in spec else spec
        default = getattr(Policy(), name)
        if isinstance(default, str):
            assert default in spec["enum"], name
        elif name == "retention_s":
            assert spec["type"] == "number"
        elif name == "boilerplate_sources":  # None by default: a list of source names
            assert spec["type"] == "array" and spec["items"] == {"type": "string"}
        else:
            assert spec["type"] == json_type[type(default)], name


# (settings of namespace "wire" or a whole map, TOML the worker would read, the chart's error)
REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"wire": {"threshold": 2}}, "[namespace.wire]\nthreshold = 2", "maximum: got 2, want 1"),
    ({"wire": {"measure": "cosine"}}, '[namespace.wire]\nmeasure = "cosine"', "must be one of"),
    ({"wire": {"retentionS": 60}}, "[namespace.wire]\nretentionS = 60", "'retentionS' not allowed"),
    (
        {"wire": {"boilerplate_lines": 2.5}},
        "[namespace.wire]\nboilerplate_lines = 2.5",
        "want integer",
    ),
    ({"wire": {"keep_text": "no"}}, '[namespace.wire]\nkeep_text = "no"', "want boolean"),
    ({"a b": {}}, '[namespace."a b"]', "invalid propertyName 'a b'"),
    ({"n" * 65: {}}, f"[namespace.{'n' * 65}]", "invalid propertyName"),
]


@pytest.mark.parametrize(("values", "toml", "error"), REFUSED, ids=lambda x: str(x)[:40])
def test_what_the_worker_refuses_the_schema_refuses(
    values: dict[str, Any], toml: str, error: str
) -> None:
    with pytest.raises(namespaces.NamespacesFileError):
        namespaces.parse(toml, Policy())
    assert error in refused(namespaces=values)


def test_decimals_given_by_helm_set_render_as_numbers() -> None:
    """`helm --set namespaces.wire.threshold=0.6` passes the string "0.6": the schema takes the
    decimal strings of every decimal setting and the file holds the numbers the worker reads."""
    given = {
        "threshold": "0.6",
        "short_threshold": "1",
        "recall": ".95",
        "retention_s": "86400.5",
        "deleted_ttl_s": "1000000.5",
        "max_size_ratio": "2.",
        "measure": "containment",
    }
    text = rendered_file(namespaces={"wire": given})
    table = tomllib.loads(text)["namespace"]["wire"]
    assert table == {
        "threshold": 0.6,
        "short_threshold": 1,
        "recall": 0.95,
        "retention_s": 86400.5,
        "deleted_ttl_s": 1000000.5,
        "max_size_ratio": 2,
        "measure": "containment",
    }
    assert namespaces.parse(text, Policy())["wire"] == Policy(
        threshold=0.6,
        short_threshold=1.0,
        recall=0.95,
        retention_s=86400.5,
        deleted_ttl_s=1000000.5,
        max_size_ratio=2.0,
        measure="containment",
    )


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("threshold", "1.5"),
        ("threshold", "0"),
        ("recall", "1"),
        ("retention_s", "-5"),
        ("max_size_ratio", "0.5"),
        ("short_threshold", "high"),
    ],
)
def test_decimal_strings_out_of_range_are_refused_in_a_namespace(setting: str, value: str) -> None:
    assert setting in refused(namespaces={"wire": {setting: value}})
