"""Offline checks of the Dockerfile's build context and the helm chart: no cluster, no engine.

Runs in the ``.venv-helm`` environment that ``scripts/validate_deploy.sh`` makes (Python >= 3.12,
from ``deploy/requirements-validate.txt``). Tools, all from PyPI:

- ``helm-sdkpy``: helm's own linter (Helm v4 Go library). It has no offline renderer: its
  ``Install`` always talks to a cluster and exposes no dry-run/client-only option.
- ``helm-python-sdk``: the same Helm v4 library with an offline ``Chart.render`` (what
  ``helm template`` does) and a linter that takes values, strict mode and a Kubernetes version.
- ``kubernetes-validate``: the Kubernetes OpenAPI schemas, strict (unknown fields are errors).
- ``docker`` (docker-py): Docker's own ``.dockerignore`` matching, to compute the build context.
- ``dockerfile``: BuildKit's Dockerfile parser (Go, compiled into the wheel).

Kinds that are CRDs (ServiceMonitor, ScaledObject, TriggerAuthentication) are not in those schemas;
they are checked against small schemas of the fields this chart emits (below), and every
cross-reference between objects (selectors, target names, ports, containers) is checked too.

Subcommands (JSON on stdout, for tests and scripts)::

    chart                         lint + render every scenario + validate; exit 1 on a problem
    context                       the build context has what the Dockerfile COPYs, and a wheel
                                  built from exactly that context is complete; exit 1 if not
    sdist                         an sdist of the tracked files has the LICENSE and no tests,
                                  and builds a complete wheel; exit 1 if not
    render [-f VALUES.yaml]... [--set-json JSON]   {"manifests": [...], "notes": "..."} or
                                  {"error": "..."} with exit status 1
    dockerfile PATH               the Dockerfile's instructions, parsed by BuildKit's parser
    yaml2json PATH|-              a YAML document as JSON
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fnmatch
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from email.parser import Parser
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "neardup"
SCENARIOS = ROOT / "deploy" / "helm-values"
RELEASE = "neardup"
NAMESPACE = "neardup"
# Oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest the schemas know.
KUBE_VERSIONS = ("1.25.0", "latest")

# The SecretStr fields of neardup.stream.worker.config.Settings (tests/deploy checks the list stays
# complete).
SECRET_SETTINGS = ("NEARDUP_KAFKA_SASL_PASSWORD", "NEARDUP_REDIS_PASSWORD", "NEARDUP_CHECK_TOKEN")

# Values that must not render: (values, a fragment of the error).
NEGATIVE_CASES: list[tuple[dict[str, Any], str]] = [
    ({"replicaCount": 9}, "replicaCount (9) must be <= kafka.topics.partitions (8)"),
    ({"check": {"open": True, "auth": {"token": "t"}}}, "check.open serves the web views without"),
    (
        {"autoscaling": {"hpa": {"enabled": True, "maxReplicas": 16}}},
        "autoscaling.hpa.maxReplicas (16) must be <= kafka.topics.partitions (8)",
    ),
    (
        {"autoscaling": {"keda": {"enabled": True, "maxReplicaCount": 9}}},
        "autoscaling.keda.maxReplicaCount (9) must be <= kafka.topics.partitions (8)",
    ),
    (
        {"autoscaling": {"hpa": {"enabled": True}, "keda": {"enabled": True}}},
        "are exclusive",
    ),
    (
        {"kafka": {"securityProtocol": "SASL_SSL", "sasl": {"username": "u"}}},
        "needs kafka.sasl.existingSecret",
    ),
    (
        {"kafka": {"sasl": {"existingSecret": "s", "password": "p"}}},
        "not both",
    ),
    ({"redis": {"url": "redis://:hunter2@redis:6379/0"}}, "must not contain credentials"),
    ({"redis": {"tls": {"existingSecret": "ca"}}}, "needs a rediss:// redis.url"),
    ({"similarity": {"measure": "cosine"}}, "value must be one of"),
    ({"namespaces": {"wire": {"threshold": 2}}}, "/namespaces/wire/threshold"),
    ({"namespaces": {"a b": {}}}, "invalid propertyName 'a b'"),
    ({"replicaCount": 0}, "minimum"),
    ({"replicaCont": 2}, "additional properties"),
]

# --- schemas of the CRD kinds, limited to what the chart emits ---------------------------------

_STR = {"type": "string", "minLength": 1}
_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_META = {"type": "object", "required": ["name"], "properties": {"name": _STR, "labels": _STR_MAP}}
_DURATION = {"type": "string", "pattern": "^([0-9]+(ms|s|m|h))+$"}

CRD_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": _META,
            "spec": {
                "type": "object",
                "required": ["selector", "endpoints"],
                "properties": {
                    "selector": {
                        "type": "object",
                        "required": ["matchLabels"],
                        "properties": {"matchLabels": _STR_MAP},
                    },
                    "namespaceSelector": {
                        "type": "object",
                        "properties": {"matchNames": {"type": "array", "items": _STR}},
                    },
                    "endpoints": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["port"],
                            "additionalProperties": False,
                            "properties": {
                                "port": _STR,
                                "path": {"type": "string", "pattern": "^/"},
                                "interval": _DURATION,
                                "scrapeTimeout": _DURATION,
                            },
                        },
                    },
                },
            },
        },
    },
    ("keda.sh/v1alpha1", "ScaledObject"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": _META,
            "spec": {
                "type": "object",
                "required": ["scaleTargetRef", "triggers"],
                "additionalProperties": False,
                "properties": {
                    "scaleTargetRef": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"apiVersion": _STR, "kind": _STR, "name": _STR},
                    },
                    "minReplicaCount": {"type": "integer", "minimum": 0},
                    "maxReplicaCount": {"type": "integer", "minimum": 1},
                    "pollingInterval": {"type": "integer", "minimum": 1},
                    "cooldownPeriod": {"type": "integer", "minimum": 0},
                    "triggers": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["type", "metadata"],
                            "properties": {
                                "type": {"const": "kafka"},
                                # KEDA's CRD types trigger metadata as map[string]string.
                                "metadata": {
                                    **_STR_MAP,
                                    "required": [
                                        "bootstrapServers",
                                        "consumerGroup",
                                        "topic",
                                        "lagThreshold",
                                    ],
                                    "properties": {
                                        "lagThreshold": {"type": "string", "pattern": "^[0-9]+$"},
                                        "activationLagThreshold": {
                                            "type": "string",
                                            "pattern": "^[0-9]+$",
                                        },
                                        "offsetResetPolicy": {"enum": ["earliest", "latest"]},
                                        "allowIdleConsumers": {"enum": ["true", "false"]},
                                        "sasl": {
                                            "enum": ["plaintext", "scram_sha256", "scram_sha512"]
                                        },
                                        "tls": {"enum": ["enable", "disable"]},
                                    },
                                },
                                "authenticationRef": {
                                    "type": "object",
                                    "required": ["name"],
                                    "properties": {"name": _STR},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
    ("keda.sh/v1alpha1", "TriggerAuthentication"): {
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "metadata": _META,
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "secretTargetRef": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["parameter", "name", "key"],
                            "additionalProperties": False,
                            "properties": {"parameter": _STR, "name": _STR, "key": _STR},
                        },
                    },
                    "env": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["parameter", "name"],
                            "additionalProperties": False,
                            "properties": {"parameter": _STR, "name": _STR, "containerName": _STR},
                        },
                    },
                },
            },
        },
    },
}


class Problems(list[str]):
    def add(self, where: str, message: str) -> None:
        self.append(f"{where}: {message}")


# --- rendering ----------------------------------------------------------------------------------


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of values (later wins), as helm merges several -f files."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Helm's Go code logs every fail() call on fd 2 (lint mode); keep our output readable."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def render(values: dict[str, Any] | None) -> tuple[list[dict[str, Any]], str]:
    """Rendered manifests (documents in template order) and NOTES.txt; raises on a chart error."""
    import helm_python

    chart = helm_python.Chart.load(str(CHART))
    with quiet_native_stderr():
        files = chart.render(values or None, name=RELEASE, namespace=NAMESPACE)
    docs: list[dict[str, Any]] = []
    notes = ""
    for path in sorted(files):
        text = files[path]
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                doc.setdefault("metadata", {}).setdefault("namespace", NAMESPACE)
                docs.append(doc)
    return docs, notes


def scenarios() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"defaults": {}}
    for path in sorted(SCENARIOS.glob("*.yaml")):
        out[path.stem] = yaml.safe_load(path.read_text()) or {}
    return out


# --- checks -------------------------------------------------------------------------------------


def lint(problems: Problems) -> None:
    """helm's linter twice: helm-sdkpy (defaults) and helm-python-sdk (each scenario, strict)."""
    import helm_python
    import helm_sdkpy

    config = helm_sdkpy.Configuration(namespace=NAMESPACE)
    with quiet_native_stderr():
        report = asyncio.run(helm_sdkpy.Lint(config).run(str(CHART)))
    for msg in report.get("Messages") or []:
        # helm-sdkpy serialises Go errors as {}: only severity and path survive.
        if msg.get("Severity", 0) >= 2:
            problems.add(f"helm-sdkpy lint {msg.get('Path')}", f"severity {msg['Severity']}")
    for err in report.get("Errors") or []:
        problems.add("helm-sdkpy lint", str(err))

    for name, values in scenarios().items():
        for kube in KUBE_VERSIONS:
            kv = None if kube == "latest" else f"v{kube}"
            with quiet_native_stderr():
                rep = helm_python.lint(str(CHART), values or None, strict=True, kube_version=kv)
            for msg in rep.get("messages", []):
                if msg.get("severity", 0) >= 2:
                    problems.add(f"helm lint [{name}, k8s {kube}] {msg['path']}", msg["error"])


def validate_kubernetes(docs: list[dict[str, Any]], where: str, problems: Problems) -> None:
    import jsonschema
    from kubernetes_validate import utils as kv

    latest = kv.latest_version()
    for doc in docs:
        key = (doc.get("apiVersion", ""), doc.get("kind", ""))
        name = f"{where} {key[1]}/{doc.get('metadata', {}).get('name')}"
        if key in CRD_SCHEMAS:
            for err in jsonschema.Draft7Validator(CRD_SCHEMAS[key]).iter_errors(doc):
                problems.add(name, f"{'.'.join(map(str, err.path))}: {err.message}")
            continue
        for version in KUBE_VERSIONS:
            version = latest if version == "latest" else version
            try:
                kv.validate(doc, version, strict=True)
            except kv.ValidationError as err:
                path = ".".join(map(str, err.path))
                problems.add(f"{name} (k8s {version})", f"{path}: {err.message}")
            except kv.SchemaNotFoundError as err:
                problems.add(name, err.message)


def _by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_references(docs: list[dict[str, Any]], where: str, problems: Problems) -> None:
    """Every name, selector and port one object uses must exist in another."""
    deployments = _by_kind(docs, "Deployment")
    if len(deployments) != 1:
        problems.add(where, f"expected one Deployment, got {len(deployments)}")
        return
    dep = deployments[0]
    dep_name = dep["metadata"]["name"]
    pod = dep["spec"]["template"]
    pod_labels = pod["metadata"].get("labels", {})
    if not _matches(dep["spec"]["selector"]["matchLabels"], pod_labels):
        problems.add(where, "Deployment selector does not match its pod labels")
    containers = {c["name"]: c for c in pod["spec"]["containers"]}
    port_names = {p["name"] for c in containers.values() for p in c.get("ports", [])}
    configmaps = {d["metadata"]["name"] for d in _by_kind(docs, "ConfigMap")}
    secrets = {d["metadata"]["name"]: d for d in _by_kind(docs, "Secret")}
    for c in containers.values():
        for src in c.get("envFrom", []):
            ref = src.get("configMapRef", {}).get("name")
            if ref and ref not in configmaps:
                problems.add(where, f"envFrom names ConfigMap {ref!r} that is not rendered")
        for env in c.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref["name"] in secrets:
                data = secrets[ref["name"]].get("data", {})
                if ref["key"] not in data:
                    problems.add(where, f"{env['name']} uses key {ref['key']!r} not in the Secret")
        for probe in ("readinessProbe", "livenessProbe"):
            port = c.get(probe, {}).get("httpGet", {}).get("port")
            if isinstance(port, str) and port not in port_names:
                problems.add(where, f"{probe} uses port {port!r} that the pod does not name")
    mounts = {m["name"] for c in containers.values() for m in c.get("volumeMounts", [])}
    volumes = {v["name"] for v in pod["spec"].get("volumes", [])}
    if mounts - volumes:
        problems.add(where, f"volumeMounts without a volume: {sorted(mounts - volumes)}")
    for v in pod["spec"].get("volumes", []):
        ref = v.get("configMap", {}).get("name")
        if ref and ref not in configmaps:
            problems.add(where, f"volume {v['name']!r} uses ConfigMap {ref!r} that is not rendered")
    # A setting that names a file under /etc/neardup must name one in a mounted volume.
    mount_paths = [m["mountPath"] for c in containers.values() for m in c.get("volumeMounts", [])]
    for cm in _by_kind(docs, "ConfigMap"):
        for key, value in (cm.get("data") or {}).items():
            path = str(value)
            mounted = any(path.startswith(mp.rstrip("/") + "/") for mp in mount_paths)
            if key.startswith("NEARDUP_") and path.startswith("/etc/neardup/") and not mounted:
                problems.add(where, f"{key}={path} is in no mounted volume")

    services = _by_kind(docs, "Service")
    for svc in services:
        if not _matches(svc["spec"]["selector"], pod_labels):
            problems.add(where, f"Service {svc['metadata']['name']} selects no worker pod")
        for p in svc["spec"]["ports"]:
            if isinstance(p.get("targetPort"), str) and p["targetPort"] not in port_names:
                problems.add(where, f"Service targetPort {p['targetPort']!r} is not a pod port")
    for pdb in _by_kind(docs, "PodDisruptionBudget"):
        if not _matches(pdb["spec"]["selector"]["matchLabels"], pod_labels):
            problems.add(where, "PodDisruptionBudget selects no worker pod")
    for sm in _by_kind(docs, "ServiceMonitor"):
        sel = sm["spec"]["selector"]["matchLabels"]
        hits = [s for s in services if _matches(sel, s["metadata"].get("labels", {}))]
        if not hits:
            problems.add(where, "ServiceMonitor selects no Service")
        svc_ports = {p.get("name") for s in hits for p in s["spec"]["ports"]}
        for ep in sm["spec"]["endpoints"]:
            if ep["port"] not in svc_ports:
                problems.add(where, f"ServiceMonitor port {ep['port']!r} is not a Service port")
    for hpa in _by_kind(docs, "HorizontalPodAutoscaler"):
        if hpa["spec"]["scaleTargetRef"]["name"] != dep_name:
            problems.add(where, "HPA targets another Deployment")
    trigger_auths = {d["metadata"]["name"]: d for d in _by_kind(docs, "TriggerAuthentication")}
    for so in _by_kind(docs, "ScaledObject"):
        if so["spec"]["scaleTargetRef"]["name"] != dep_name:
            problems.add(where, "ScaledObject targets another Deployment")
        for trig in so["spec"]["triggers"]:
            ref = trig.get("authenticationRef", {}).get("name")
            if ref and ref not in trigger_auths:
                problems.add(where, f"ScaledObject uses TriggerAuthentication {ref!r} not rendered")
    for ta in trigger_auths.values():
        for env in ta["spec"].get("env", []):
            c = containers.get(env.get("containerName", ""))
            names = {e["name"] for e in (c or {}).get("env", [])}
            if c is None or env["name"] not in names:
                problems.add(
                    where, f"TriggerAuthentication env {env['name']} is not on a container"
                )


def check_secrets(docs: list[dict[str, Any]], where: str, problems: Problems) -> None:
    """Secrets travel by reference: no password or token in a ConfigMap, an env value, a URL."""
    for cm in _by_kind(docs, "ConfigMap"):
        for key, value in (cm.get("data") or {}).items():
            if key in SECRET_SETTINGS:
                problems.add(where, f"ConfigMap carries the secret {key}")
            if "://" in str(value) and "@" in str(value):
                problems.add(where, f"ConfigMap {key} holds a URL with credentials")
    for dep in _by_kind(docs, "Deployment"):
        for c in dep["spec"]["template"]["spec"]["containers"]:
            for env in c.get("env", []):
                secret = env["name"] in SECRET_SETTINGS
                if secret and "secretKeyRef" not in env.get("valueFrom", {}):
                    problems.add(where, f"{env['name']} is not read from a Secret")


def cmd_chart(_: argparse.Namespace) -> int:
    problems = Problems()
    steps: list[tuple[str, Callable[[], None]]] = [("helm lint", lambda: lint(problems))]

    def render_all() -> None:
        for name, values in scenarios().items():
            where = f"[{name}]"
            try:
                docs, _notes = render(values)
            except Exception as exc:
                problems.add(where, f"does not render: {exc}")
                continue
            validate_kubernetes(docs, where, problems)
            check_references(docs, where, problems)
            check_secrets(docs, where, problems)
            kinds = sorted({d["kind"] for d in docs})
            print(f"  {name}: {len(docs)} objects ({', '.join(kinds)})")

    def negatives() -> None:
        for values, fragment in NEGATIVE_CASES:
            try:
                render(values)
            except Exception as exc:
                if fragment not in str(exc):
                    problems.add(f"refuse {json.dumps(values)}", f"wrong error: {exc}")
            else:
                problems.add(f"refuse {json.dumps(values)}", "rendered, but must be refused")

    steps += [("render + validate", render_all), ("refused values", negatives)]
    for label, step in steps:
        start = time.monotonic()
        step()
        print(f"{label}: {time.monotonic() - start:.1f}s")
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        return 1
    from kubernetes_validate import utils as kv

    print(
        f"chart OK: lint, {len(scenarios())} scenarios valid against Kubernetes "
        f"{KUBE_VERSIONS[0]} and {kv.latest_version()} (strict), "
        f"{len(NEGATIVE_CASES)} bad value sets refused"
    )
    return 0


# --- Docker build context -------------------------------------------------------------------

# What must never be sent to the Docker daemon (size, secrets, non-reproducible state).
NOT_IN_CONTEXT = (".git", ".venv", ".venv-helm", ".services", "tests", "bench", ".hypothesis")
# What the image needs from the wheel.
WHEEL_MUST_HAVE = (
    "neardup/stream/index/redis/neardup.lua",
    "neardup/stream/worker/app.py",
    "neardup/stream/worker/http/static/index.html",
    "neardup/stream/cli/main.py",
    "neardup/sketch/__init__.py",
    "neardup/__init__.py",
)


def build_context() -> list[str]:
    """Files (relative paths) Docker sends for ``docker build .``, by Docker's own matcher."""
    from docker.utils.build import exclude_paths

    ignore = ROOT / ".dockerignore"
    patterns = [
        line.strip()
        for line in ignore.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    paths = exclude_paths(str(ROOT), patterns, dockerfile="Dockerfile")
    # neardup/sketch and neardup/stream are links to the top-level folders: sent as links
    return sorted(p for p in paths if (ROOT / p).is_file() or (ROOT / p).is_symlink())


def _copy_sources(dockerfile_path: Path) -> list[list[str]]:
    """Sources of each COPY from the build context (not --from another stage)."""
    import dockerfile

    out = []
    for c in dockerfile.parse_file(str(dockerfile_path)):
        if c.cmd.upper() == "COPY" and not any(f.startswith("--from") for f in c.flags):
            out.append(list(c.value[:-1]))
    return out


def _matches_source(path: str, src: str) -> bool:
    src = src.removeprefix("./")
    return fnmatch.fnmatchcase(path, src) or path.startswith(src.rstrip("/") + "/")


def pip_wheel(source: Path, wheels: Path) -> subprocess.CompletedProcess[str]:
    """``pip wheel`` of a source folder or an sdist, no dependencies, as the Dockerfile runs it."""
    argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir"]
    return subprocess.run(  # noqa: S603 - fixed argv, our own interpreter
        [*argv, str(wheels), str(source)], capture_output=True, text=True, check=False
    )


def wheel_checked(source: Path, wheels: Path, problems: Problems, of: str, what: str) -> None:
    """A wheel built from ``source`` (a directory or an sdist), checked (:func:`check_wheel`)."""
    proc = pip_wheel(source, wheels)
    built = sorted(wheels.glob("neardup-*.whl"))
    if proc.returncode != 0 or not built:
        problems.add("wheel", f"pip wheel of {of} failed:\n{proc.stderr[-2000:]}")
    else:
        check_wheel(built[0], problems, what)


def check_wheel(wheel: Path, problems: Problems, where: str) -> None:
    """A wheel installs the package neardup alone, with what the image needs, the console script,
    the license text, and requirements that keep the base install light (extras: the rest)."""
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        entry = next((n for n in names if n.endswith("entry_points.txt")), None)
        scripts = whl.read(entry).decode() if entry else ""
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    if tops != {"neardup"}:
        problems.add(where, f"installs {sorted(tops)}: only the package neardup")
    for must in WHEEL_MUST_HAVE:
        if must not in names:
            problems.add(where, f"{wheel.name} lacks {must}")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.add(where, f"{wheel.name} lacks the LICENSE (dist-info/licenses/LICENSE)")
    if "neardup = neardup.stream.cli.main:main" not in scripts:
        problems.add(where, "no `neardup` console script (the image's ENTRYPOINT)")
    with zipfile.ZipFile(wheel) as whl:
        meta = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        check_requirements(whl.read(meta).decode() if meta else "", problems, where)
    print(f"{where} {wheel.name}: {len(names)} files")


# What the base install must not bring (the worker's stack and the Redis client: extras), and
# what each extra must: the image installs neardup[stream].
NOT_IN_BASE = {"faust-streaming", "aiokafka", "aiohttp", "redis", "pydantic-settings"}
IN_EXTRA = {
    "redis": {"redis"},
    "stream": {"neardup", "faust-streaming", "aiokafka"},
    "html": {"trafilatura"},
    "parquet": {"pyarrow"},
}


def check_requirements(metadata: str, problems: Problems, where: str) -> None:
    """The wheel's Requires-Dist: a light base, each extra with what it is for."""
    from packaging.requirements import Requirement

    values = Parser().parsestr(metadata).get_all("Requires-Dist") or []
    reqs = [Requirement(value) for value in values]
    base = {r.name for r in reqs if r.marker is None}
    if not base:
        problems.add(where, "the wheel's METADATA requires nothing: no Requires-Dist")
    if base & NOT_IN_BASE:
        problems.add(where, f"the base install requires {sorted(base & NOT_IN_BASE)}: extras")
    for extra, wanted in IN_EXTRA.items():
        got = {r.name for r in reqs if r.marker is not None and r.marker.evaluate({"extra": extra})}
        if not wanted <= got:
            problems.add(where, f"extra {extra!r} lacks {sorted(wanted - got)}")


def cmd_context(_: argparse.Namespace) -> int:
    problems = Problems()
    start = time.monotonic()
    files = build_context()
    size = sum((ROOT / f).stat().st_size for f in files)
    for f in files:
        top = f.split("/", 1)[0]
        if top in NOT_IN_CONTEXT:
            problems.add("context", f"{f} is sent to the daemon; exclude it in .dockerignore")
    for sources in _copy_sources(ROOT / "Dockerfile"):
        hits = {src: [f for f in files if _matches_source(f, src)] for src in sources}
        for src, matched in hits.items():
            if not matched and not any(ch in src for ch in "*?["):
                problems.add("COPY", f"{src} is not in the build context")
        if not any(hits.values()):
            problems.add("COPY", f"no source of COPY {' '.join(sources)} is in the build context")
    print(f"build context: {len(files)} files, {size / 1024:.0f} KiB")

    with tempfile.TemporaryDirectory(prefix="neardup-context-") as tmp:
        ctx = Path(tmp) / "ctx"
        for f in files:
            (ctx / f).parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / f).is_symlink():
                (ctx / f).symlink_to((ROOT / f).readlink())
            else:
                shutil.copy2(ROOT / f, ctx / f)
        wheel_checked(ctx, Path(tmp) / "wheels", problems, "the build context", "wheel")
    print(f"context check: {time.monotonic() - start:.1f}s")
    for p in problems:
        print(f"FAIL {p}")
    return 1 if problems else 0


# What an sdist is built from: the tracked files of these (tests/ included, to see it left out).
SDIST_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "sketch", "stream")
SDIST_SOURCES += ("neardup", "tests", "setup.py", "core")  # core: the compiled core's crate
# what the sdist must carry of the compiled core, and what of its builds it must not
CORE_SOURCES = ("setup.py", "core/Cargo.toml", "core/Cargo.lock", "core/src/lib.rs")


def _copy_tracked(dest: Path) -> None:
    """The repository's tracked (and new, not ignored) files of SDIST_SOURCES, links as links."""
    listed = subprocess.run(  # noqa: S603 - fixed argv
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *SDIST_SOURCES],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for f in listed:
        if not (ROOT / f).exists() and not (ROOT / f).is_symlink():
            continue  # deleted, not yet committed
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / f).is_symlink():
            (dest / f).symlink_to((ROOT / f).readlink())
        else:
            shutil.copy2(ROOT / f, dest / f)


def build_sdist(src: Path, out: Path, tmp: Path) -> Path:
    """The sdist setuptools' build backend makes of ``src`` (pip cannot build one; the backend
    is the version pyproject's build-system asks for, installed into ``tmp``)."""
    backend = tmp / "backend"
    requires = tomllib.loads((src / "pyproject.toml").read_text())["build-system"]["requires"]
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(backend)]
    subprocess.run([*pip, *requires], check=True, capture_output=True)  # noqa: S603
    code = (
        f"import sys; sys.path.insert(0, {str(backend)!r}); from setuptools import build_meta; "
        f"print(build_meta.build_sdist({str(out)!r}))"
    )
    proc = subprocess.run(  # noqa: S603 - our own interpreter, our own code
        [sys.executable, "-c", code], cwd=src, capture_output=True, text=True, check=True
    )
    return out / proc.stdout.strip().splitlines()[-1]


def cmd_sdist(_: argparse.Namespace) -> int:
    problems = Problems()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="neardup-sdist-") as tmp:
        src = Path(tmp) / "src"
        _copy_tracked(src)
        sdist = build_sdist(src, Path(tmp) / "dist", Path(tmp))
        with tarfile.open(sdist) as tar:
            names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
        if "LICENSE" not in names:
            problems.add("sdist", f"{sdist.name} lacks the LICENSE")
        if strays := [n for n in names if n.split("/", 1)[0] == "tests"]:
            problems.add("sdist", f"{sdist.name} carries tests without their fixtures: {strays}")
        if missing := [n for n in CORE_SOURCES if n not in names]:
            problems.add("sdist", f"{sdist.name} lacks the compiled core's sources: {missing}")
        if built := [n for n in names if n.startswith("core/target/") or n.endswith(".so")]:
            problems.add("sdist", f"{sdist.name} carries built files: {built[:5]}")
        print(f"sdist {sdist.name}: {len(names)} files")
        wheel_checked(sdist, Path(tmp) / "wheels", problems, "the sdist", "wheel from the sdist")
    print(f"sdist check: {time.monotonic() - start:.1f}s")
    for p in problems:
        print(f"FAIL {p}")
    return 1 if problems else 0


def cmd_render(args: argparse.Namespace) -> int:
    values: dict[str, Any] = {}
    for f in args.values or []:
        values = merge(values, yaml.safe_load(Path(f).read_text()) or {})
    if args.set_json:
        values = merge(values, json.loads(args.set_json))
    try:
        docs, notes = render(values)
    except Exception as exc:
        json.dump({"error": str(exc)}, sys.stdout)
        return 1
    json.dump({"manifests": docs, "notes": notes}, sys.stdout)
    return 0


def cmd_dockerfile(args: argparse.Namespace) -> int:
    import dockerfile

    cmds = dockerfile.parse_file(args.path)
    json.dump(
        [
            {
                "cmd": c.cmd.upper(),
                "json": c.json,
                "value": list(c.value),
                "flags": list(c.flags),
                "original": c.original,
            }
            for c in cmds
        ],
        sys.stdout,
    )
    return 0


def cmd_yaml2json(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.path == "-" else Path(args.path).read_text()
    json.dump(yaml.safe_load(io.StringIO(text)), sys.stdout)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("chart").set_defaults(func=cmd_chart)
    sub.add_parser("context").set_defaults(func=cmd_context)
    sub.add_parser("sdist").set_defaults(func=cmd_sdist)
    r = sub.add_parser("render")
    r.add_argument("-f", "--values", action="append", help="values file (repeatable)")
    r.add_argument("--set-json", help="values as a JSON object, merged last")
    r.set_defaults(func=cmd_render)
    d = sub.add_parser("dockerfile")
    d.add_argument("path")
    d.set_defaults(func=cmd_dockerfile)
    y = sub.add_parser("yaml2json")
    y.add_argument("path")
    y.set_defaults(func=cmd_yaml2json)
    args = p.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
