"""The deployment files, checked without a container engine or a cluster.

What the image, docker-compose.yml and the helm chart promise (non-root, read-only root
filesystem, readiness on /health and liveness on /live, KRaft, AOF, replicas <= partitions,
secrets by reference, compose closed to other hosts) is asserted on what the real tools produce:
BuildKit's parser for the Dockerfile,
``docker-compose config`` for the compose file, helm's renderer for the chart. Those tools live
in ``.venv-helm`` (Python >= 3.12) and Debian's docker-compose; when they are missing these tests
fail and say how to install them (``bash scripts/validate_deploy.sh --install-only``).

Every ``NEARDUP_*`` name the deployment sets is checked against
``neardup.stream.worker.config.Settings``, and the settings each deployment produces are validated
by ``Settings`` itself.
"""

from __future__ import annotations

import base64
import functools
import http.server
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import threading
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from packaging.requirements import Requirement
from pydantic import SecretStr

from harness import compose as compose_files
from harness.services import KAFKA_SETTINGS
from neardup.stream.worker.config import Settings

ROOT = Path(__file__).resolve().parents[2]
HELM_VENV = Path(os.environ.get("HELM_VENV", ROOT / ".venv-helm"))
HELM_PY = HELM_VENV / "bin" / "python"
CHECK = ROOT / "deploy" / "deploy_check.py"
INSTALL_HINT = (
    "install the deployment toolchain with `bash scripts/validate_deploy.sh --install-only` "
    "(docker-compose from apt, helm-sdkpy/helm-python-sdk/kubernetes-validate into .venv-helm)"
)
SETTINGS = {f"NEARDUP_{name.upper()}": field for name, field in Settings.model_fields.items()}
SCENARIOS = ["defaults", "dev", "hpa-mtls", "production"]
# Interpolation variables of docker-compose.yml that are not worker settings.
COMPOSE_ONLY_VARIABLES = {"NEARDUP_PARTITIONS"}
# Broker settings of the tests' server.properties (harness/services.py) that docker-compose.yml's
# single node must share: what a one-replica KRaft node needs and what decides group behaviour.
SHARED_KAFKA_SETTINGS = (
    "process.roles",
    "node.id",
    "controller.listener.names",
    "auto.create.topics.enable",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "group.initial.rebalance.delay.ms",
    "default.replication.factor",
    "min.insync.replicas",
)
# Apache Kafka's defaults for group.min.session.timeout.ms and group.max.session.timeout.ms.
KAFKA_SESSION_TIMEOUT_BOUNDS_S = (6.0, 1800.0)


def pom_kafka_version() -> str:
    """The Apache Kafka version the tests run: deploy/kafka/pom.xml, the one source of truth."""
    root = ET.parse(ROOT / "deploy" / "kafka" / "pom.xml").getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    version = root.findtext("m:properties/m:kafka.version", namespaces=ns)
    assert version and re.fullmatch(r"\d+\.\d+\.\d+", version), version
    return version


def _secret_settings() -> set[str]:
    def mentions_secret(annotation: Any) -> bool:
        return annotation is SecretStr or any(
            mentions_secret(a) for a in getattr(annotation, "__args__", ())
        )

    return {name for name, field in SETTINGS.items() if mentions_secret(field.annotation)}


SECRET_SETTINGS = _secret_settings()


# --- the toolchain ------------------------------------------------------------------------------


def _require_helm_venv() -> None:
    if not HELM_PY.exists():
        pytest.fail(f"deployment toolchain missing: {HELM_PY} not found; {INSTALL_HINT}")


def run_check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    _require_helm_venv()
    return subprocess.run(
        [str(HELM_PY), str(CHECK), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=240,
    )


@functools.cache
def render(scenario: str = "defaults", set_json: str | None = None) -> dict[str, Any]:
    """{"manifests": [...], "notes": str} or {"error": str} from helm's own renderer."""
    args = ["render"]
    if scenario != "defaults":
        args += ["-f", f"deploy/helm-values/{scenario}.yaml"]
    if set_json:
        args += ["--set-json", set_json]
    proc = run_check(*args)
    try:
        out: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"render failed to run: {proc.stderr[-2000:]}")
    assert (proc.returncode == 0) == ("manifests" in out), proc.stderr[-2000:]
    return out


def manifests(scenario: str = "defaults", **values: Any) -> list[dict[str, Any]]:
    out = render(scenario, json.dumps(values, sort_keys=True) if values else None)
    assert "manifests" in out, out.get("error")
    docs: list[dict[str, Any]] = out["manifests"]
    return docs


def refused(**values: Any) -> str:
    out = render("defaults", json.dumps(values, sort_keys=True))
    assert "error" in out, f"{values} rendered but must be refused"
    return str(out["error"])


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def kinds(docs: list[dict[str, Any]]) -> set[str]:
    return {d["kind"] for d in docs}


def worker_container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def settings_config_map(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The one ConfigMap the worker takes its environment from (envFrom); others are files."""
    (ref,) = [s["configMapRef"]["name"] for s in worker_container(docs)["envFrom"]]
    (found,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref]
    return found


def mounted_files(docs: list[dict[str, Any]]) -> dict[str, str]:
    """path -> content of every ConfigMap key the worker container sees as a file."""
    maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    volumes = {v["name"]: v for v in one(docs, "Deployment")["spec"]["template"]["spec"]["volumes"]}
    out = {}
    for mount in worker_container(docs)["volumeMounts"]:
        source = volumes[mount["name"]].get("configMap")
        if source:
            for key, text in maps[source["name"]]["data"].items():
                out[f"{mount['mountPath'].rstrip('/')}/{key}"] = text
    return out


def worker_settings(docs: list[dict[str, Any]]) -> dict[str, str]:
    """What the worker's environment holds: ConfigMap values, then env (secrets as "<secret>")."""
    env = dict(settings_config_map(docs)["data"])
    for item in worker_container(docs).get("env", []):
        env[item["name"]] = item.get("value", "<secret>")
    return env


def settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in list(os.environ):
        if name.startswith("NEARDUP_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


# --- Dockerfile ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dockerfile() -> list[dict[str, Any]]:
    proc = run_check("dockerfile", "Dockerfile")
    assert proc.returncode == 0, proc.stderr
    parsed: list[dict[str, Any]] = json.loads(proc.stdout)
    return parsed


def stages(instructions: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    out: list[list[dict[str, Any]]] = []
    for ins in instructions:
        if ins["cmd"] == "FROM":
            out.append([])
        if out:
            out[-1].append(ins)
    return out


def test_dockerfile_is_multi_stage_on_a_pinned_slim_python_311(dockerfile):
    args = {
        i["value"][0].split("=", 1)[0]: i["value"][0].split("=", 1)[1]
        for i in dockerfile
        if i["cmd"] == "ARG" and "=" in i["value"][0]
    }
    all_stages = stages(dockerfile)
    assert len(all_stages) >= 2
    for stage in all_stages:
        image = stage[0]["value"][0]
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
        # A full patch version, never a floating tag such as "latest" or "3.11-slim".
        assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", image), image


def test_dockerfile_runtime_runs_as_uid_10001(dockerfile):
    runtime = stages(dockerfile)[-1]
    users = [i["value"][0] for i in runtime if i["cmd"] == "USER"]
    assert users and users[-1].split(":")[0] == "10001"
    creates = " ".join(" ".join(i["value"]) for i in runtime if i["cmd"] == "RUN")
    assert "--uid 10001" in creates and "--gid 10001" in creates


def test_dockerfile_entrypoint_is_the_worker(dockerfile):
    last = {i["cmd"]: i for i in stages(dockerfile)[-1]}
    assert last["ENTRYPOINT"]["json"] and last["ENTRYPOINT"]["value"] == ["neardup"]
    assert last["CMD"]["json"] and last["CMD"]["value"] == ["worker"]
    assert "6066" in last["EXPOSE"]["value"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["neardup"] == "neardup.stream.cli.main:main"
    help_ = subprocess.run(
        [sys.executable, "-m", "neardup.stream.cli.main", "worker", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert help_.returncode == 0 and "--no-create-topics" in help_.stdout


def test_dockerfile_installs_pinned_wheels_without_a_cache(dockerfile):
    builder, runtime = stages(dockerfile)[0], stages(dockerfile)[-1]
    builder_runs = " ".join(" ".join(i["value"]) for i in builder if i["cmd"] == "RUN").split()
    builder_runs = " ".join(builder_runs)
    assert "pip wheel" in builder_runs and "--constraint deploy/constraints.txt" in builder_runs
    assert "--no-index --find-links /wheels" in builder_runs
    assert builder_runs.count("--no-cache-dir") >= 2
    runtime_text = " ".join(i["original"] for i in runtime)
    assert "--from=builder" in runtime_text
    for tool in ("curl", "wget", "apt-get install", "pip install"):
        assert tool not in runtime_text, f"the runtime stage must not use {tool}"


def test_dockerfile_suits_a_read_only_root_filesystem(dockerfile):
    runtime = stages(dockerfile)[-1]
    env = " ".join(" ".join(i["value"]) for i in runtime if i["cmd"] == "ENV")
    assert "NEARDUP_DATA_DIR /tmp/neardup" in env
    assert "PYTHONDONTWRITEBYTECODE 1" in env
    volumes = [v for i in runtime if i["cmd"] == "VOLUME" for v in i["value"]]
    assert "/tmp" in volumes


class _Health(http.server.BaseHTTPRequestHandler):
    status: ClassVar[int] = 200
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).paths.append(self.path)
        self.send_response(self.status if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[tuple[int, type[_Health]]]:
    handler = type("Handler", (_Health,), {"status": 200, "paths": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], handler
    finally:
        server.shutdown()
        server.server_close()


def test_healthcheck_fails_unless_health_answers_200(dockerfile, health_server):
    (hc,) = [i for i in stages(dockerfile)[-1] if i["cmd"] == "HEALTHCHECK"]
    assert hc["json"] and hc["value"][0] == "CMD"
    argv = hc["value"][1:]
    assert argv[0] == "python", "slim has no curl: the check must use python's urllib"
    port, handler = health_server

    def probe(port: int) -> int:
        env = {**os.environ, "NEARDUP_WEB_PORT": str(port)}
        cmd = [sys.executable, *argv[1:]]
        return subprocess.run(cmd, env=env, capture_output=True, timeout=30, check=False).returncode

    assert probe(port) == 0
    assert handler.paths == ["/health"]
    handler.status = 503  # Kafka or Redis unreachable
    assert probe(port) != 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    assert probe(closed) != 0


def test_build_context_has_what_the_image_needs():
    """The .dockerignore allow-list, by Docker's own matcher; a wheel built from exactly it."""
    proc = run_check("context")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_license_is_the_apache_2_text_pyproject_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (project["license"], project["license-files"]) == ("Apache-2.0", ["LICENSE"])
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:5] == ["Apache", "License", "Version", "2.0,", "January"]
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX" in text
    assert len(text.splitlines()) == 202  # the whole text, its appendix included


def test_sdist_has_the_license_no_tests_and_builds_a_complete_wheel():
    """The Apache 2.0 text in the sdist and in the wheel pip builds from it; the tests, which
    need their conftest and data, stay in the repository."""
    proc = run_check("sdist")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _freeze_constraints() -> Any:
    """deploy/freeze_constraints.py as a module: its closure is what the pins must cover."""
    spec = importlib.util.spec_from_file_location(
        "freeze_constraints", ROOT / "deploy" / "freeze_constraints.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_constraints_pin_every_runtime_dependency():
    """Every package of the image's closure, neardup with its extras (``redis[hiredis]`` and
    ``aiokafka[...]``'s too), is pinned, and each pin satisfies what pyproject asks for."""
    freeze = _freeze_constraints()
    pins = {}
    for line in (ROOT / "deploy" / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    missing = sorted(freeze.runtime_closure().keys() - pins.keys())
    assert not missing, (
        f"unpinned runtime dependencies (run deploy/freeze_constraints.py): {missing}"
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    todo, seen = list(freeze.IMAGE_EXTRAS), set()
    while todo:  # the image's extras, and the extras of neardup they name (stream: redis)
        extra = todo.pop()
        seen.add(extra)
        for spec in project["optional-dependencies"][extra]:
            req = Requirement(spec)
            if req.name == "neardup":
                todo.extend(req.extras - seen)
            else:
                wanted.append(spec)
    assert {"faust-streaming", "redis"} <= {Requirement(spec).name for spec in wanted}
    for spec in wanted:
        req = Requirement(spec)
        pinned = pins[re.sub(r"[-_.]+", "-", req.name).lower()]
        assert req.specifier.contains(pinned), f"{req.name}=={pinned} violates {spec}"


def test_dockerfile_installs_the_extras_the_constraints_pin(dockerfile):
    """The image is the worker: neardup with the extras deploy/freeze_constraints.py pins."""
    extras = ",".join(_freeze_constraints().IMAGE_EXTRAS)
    builder = stages(dockerfile)[0]
    runs = " ".join(" ".join(i["value"]) for i in builder if i["cmd"] == "RUN")
    assert f'--wheel-dir /wheels ".[{extras}]"' in runs
    assert f'--constraint deploy/constraints.txt "neardup[{extras}]"' in runs


# --- docker-compose.yml -------------------------------------------------------------------------


def compose_config(profile: str | None = None, **env: str) -> dict[str, Any]:
    """What ``docker-compose config`` gives with the required secrets and ``env`` set."""
    try:
        return compose_files.config(env, profile)
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return compose_config("example")


def mounts(svc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """target -> (type, source) of a service's volumes, in either of `config`'s two syntaxes."""
    out = {}
    for v in svc.get("volumes", []):
        if isinstance(v, str):  # docker-compose v1: "source:target[:mode]"
            source, target = v.split(":")[:2]
            kind = "bind" if source.startswith(("/", ".")) else "volume"
            out[target] = (kind, source)
        else:
            out[v["target"]] = (v["type"], v["source"])
    return out


def workers(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: svc
        for name, svc in compose["services"].items()
        if "build" in svc and (svc.get("command") or [None])[0] == "worker"
    }


def test_compose_file_is_valid_for_docker_compose():
    for profile in (None, "example"):
        proc = compose_files.run_config(compose_files.SECRETS, "-q", profile=profile)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("secret", sorted(compose_files.SECRETS))
@pytest.mark.parametrize("value", [None, ""])
def test_compose_refuses_to_start_without_its_secrets(secret, value):
    """Unset or empty, a required secret stops every compose command, naming it and .env."""
    env = {k: v for k, v in compose_files.SECRETS.items() if k != secret}
    if value is not None:
        env[secret] = value
    proc = compose_files.run_config(env, "-q")
    assert proc.returncode != 0
    assert secret in proc.stderr and ".env.example" in proc.stderr, proc.stderr


def test_env_example_names_every_required_variable_and_sets_none():
    """.env.example holds each variable docker-compose.yml requires, empty: copied unfilled,
    compose still refuses to start."""
    raw = (ROOT / "docker-compose.yml").read_text()
    required = set(re.findall(r"\$\{(\w+):\?", raw))
    assert required == set(compose_files.SECRETS)
    lines = (ROOT / ".env.example").read_text().splitlines()
    assigned = dict(x.split("=", 1) for x in lines if x and not x.startswith("#"))
    assert assigned == dict.fromkeys(required, "")
    assert compose_files.run_config(assigned, "-q").returncode != 0
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()


def test_compose_publishes_every_port_on_loopback_only(compose):
    raw = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    written = [p for svc in raw["services"].values() for p in svc.get("ports", [])]
    assert written and all(str(p).startswith("127.0.0.1:") for p in written), written
    published = [p for svc in compose["services"].values() for p in compose_files.ports(svc)]
    assert len(published) == len(written)
    assert {p.host_ip for p in published} == {"127.0.0.1"}, published
    assert not any("network_mode" in svc for svc in compose["services"].values())


def test_compose_workers_require_a_token_and_redis_a_password(compose):
    token = compose_files.SECRETS["NEARDUP_CHECK_TOKEN"]
    password = compose_files.SECRETS["NEARDUP_REDIS_PASSWORD"]
    command = compose["services"]["redis"]["command"]
    assert command[command.index("--requirepass") + 1] == password
    assert compose["services"]["redis"]["environment"]["REDISCLI_AUTH"] == password
    for svc in workers(compose).values():
        env = svc["environment"]
        assert env["NEARDUP_CHECK_TOKEN"] == token
        # as the chart passes it: the password beside a URL without credentials
        assert env["NEARDUP_REDIS_PASSWORD"] == password
        assert "@" not in env["NEARDUP_REDIS_URL"]


def test_compose_kafka_runs_kraft_with_inside_and_outside_listeners(compose):
    services = compose["services"]
    assert not any("zookeeper" in str(s.get("image", "")) for s in services.values())
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{env['KAFKA_NODE_ID']}@kafka:9093"
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    advertised = dict(item.split("://", 1) for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert advertised["INTERNAL"] == "kafka:19092"
    assert advertised["EXTERNAL"] == "localhost:9092"
    assert {p.target for p in compose_files.ports(kafka)} == {9092}
    assert env["CLUSTER_ID"] and env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    kind, source = mounts(kafka)[env["KAFKA_LOG_DIRS"]]
    assert kind == "volume" and source in compose["volumes"]
    assert "kafka-broker-api-versions.sh" in " ".join(kafka["healthcheck"]["test"])


def test_compose_kafka_is_the_broker_the_tests_run(compose):
    """The image tag is deploy/kafka/pom.xml's version, and the single-node settings are those of
    the server.properties the tests start the broker with."""
    version = pom_kafka_version()
    images = {s["image"] for s in compose["services"].values() if "kafka" in s.get("image", "")}
    assert images == {f"apache/kafka:{version}"}
    env = {k: str(v) for k, v in compose["services"]["kafka"]["environment"].items()}
    for key in SHARED_KAFKA_SETTINGS:
        name = "KAFKA_" + key.upper().replace(".", "_")
        assert env.get(name) == KAFKA_SETTINGS[key], (name, env.get(name), KAFKA_SETTINGS[key])
    protocols = dict(p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    listeners = dict(item.split("://", 1) for item in env["KAFKA_LISTENERS"].split(","))
    assert set(protocols) == set(listeners) and set(protocols.values()) == {"PLAINTEXT"}
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in listeners
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] != env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    # the workers reach the broker at the address it advertises inside the compose network
    advertised = dict(item.split("://", 1) for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert "CONTROLLER" not in advertised
    for svc in workers(compose).values():
        bootstrap = svc["environment"]["NEARDUP_KAFKA_BOOTSTRAP"]
        assert bootstrap == advertised[env["KAFKA_INTER_BROKER_LISTENER_NAME"]]
        assert bootstrap.split(":")[0] == compose["services"]["kafka"]["hostname"]


def test_deployment_files_name_one_kafka_version():
    version = pom_kafka_version()
    files = [
        "docker-compose.yml",
        "README.md",
        *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
        "helm/neardup/values.yaml",
        "helm/neardup/Chart.yaml",
    ]
    named = {
        (path, v)
        for path in files
        for v in re.findall(r"Apache\s+Kafka\s+(\d+\.\d+\.\d+)", (ROOT / path).read_text())
    }
    assert {v for _, v in named} <= {version}, f"deploy/kafka/pom.xml pins {version}: {named}"
    for path in ("docker-compose.yml", "helm/neardup/values.yaml"):
        assert (path, version) in named, f"{path} does not say which Kafka it is for"


def test_compose_redis_7_persists_with_aof(compose):
    redis = compose["services"]["redis"]
    assert re.match(r"redis:7\.", redis["image"])
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    kind, source = mounts(redis)["/data"]
    assert kind == "volume" and source in compose["volumes"]
    assert redis["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]


def test_compose_topics_use_one_partition_variable():
    raw = (ROOT / "docker-compose.yml").read_text()
    assert "--partitions ${NEARDUP_PARTITIONS:-8}" in raw
    for partitions in ("8", "5"):
        env = {} if partitions == "8" else {"NEARDUP_PARTITIONS": partitions}
        config = compose_config(**env)
        topics = config["services"]["topics"]
        assert topics["image"] == config["services"]["kafka"]["image"]
        script = " ".join(topics["command"])
        assert f"--partitions {partitions}" in script
        assert "kafka-topics.sh" in script and "--if-not-exists" in script
        for svc in workers(config).values():
            env_ = svc["environment"]
            assert env_["NEARDUP_TOPIC_PARTITIONS"] == partitions
            for topic in ("INPUT", "VERDICT", "DLQ"):
                assert env_[f"NEARDUP_{topic}_TOPIC"] in script
        assert topics["depends_on"]["kafka"]["condition"] == "service_healthy"


def test_compose_runs_two_workers_after_their_dependencies(compose):
    found = workers(compose)
    assert len(found) == 2
    published = set()
    for svc in found.values():
        assert Path(svc["build"]["context"]).resolve() == ROOT
        assert svc["command"] == ["worker", "--no-create-topics"]
        deps = {name: d["condition"] for name, d in svc["depends_on"].items()}
        assert deps == {
            "kafka": "service_healthy",
            "redis": "service_healthy",
            "topics": "service_completed_successfully",
        }
        ((port,),) = [[p for p in compose_files.ports(svc) if p.target == 6066]]
        published.add(port.published)
        assert svc["read_only"] is True
        assert any(t.startswith("/tmp") for t in svc["tmpfs"])
        env = svc["environment"]
        assert env["NEARDUP_DATA_DIR"].startswith("/tmp/")
        assert env["NEARDUP_KAFKA_BOOTSTRAP"] == "kafka:19092"
        assert env["NEARDUP_REDIS_URL"].startswith("redis://redis:6379")
    assert published == {6066, 6067}
    groups = {svc["environment"]["NEARDUP_CONSUMER_GROUP"] for svc in found.values()}
    assert len(groups) == 1, "both workers must share one consumer group to split partitions"


def test_compose_producer_example_is_opt_in(compose):
    producer = compose["services"]["producer"]
    assert producer["profiles"] == ["example"]
    mounted = {Path(source).resolve() for _, source in mounts(producer).values()}
    assert ROOT / "deploy" / "producer_example.py" in mounted
    assert ROOT / "examples" / "sample.jsonl.gz" in mounted
    proc = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "producer_example.py"), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and "--bootstrap" in proc.stdout


def test_compose_settings_are_real_settings(compose, monkeypatch):
    raw = (ROOT / "docker-compose.yml").read_text()
    unknown = set(re.findall(r"NEARDUP_[A-Z0-9_]+", raw)) - SETTINGS.keys() - COMPOSE_ONLY_VARIABLES
    assert not unknown, f"not in neardup.stream.worker.config.Settings: {unknown}"
    for name in COMPOSE_ONLY_VARIABLES:  # interpolation only, never a container variable
        code = [line for line in raw.splitlines() if not line.lstrip().startswith("#")]
        assert all(f"${{{name}" in line for line in code if name in line)
    for svc in compose["services"].values():
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        neardup = {k: v for k, v in env.items() if k.startswith("NEARDUP_")}
        assert neardup.keys() <= SETTINGS.keys()
        if neardup:
            settings_from(neardup, monkeypatch)  # raises if a value is invalid


# --- helm chart ---------------------------------------------------------------------------------


def test_chart_lints_renders_and_validates_against_kubernetes():
    """helm lint (helm-sdkpy and helm-python-sdk), every scenario rendered and checked with
    kubernetes-validate (strict, 1.25 and newest), CRDs and cross-references, bad values refused."""
    proc = run_check("chart")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_worker_pod_is_locked_down(scenario):
    docs = manifests(scenario)
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    sc = worker_container(docs)["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    tmp = [m for m in worker_container(docs)["volumeMounts"] if m["mountPath"] == "/tmp"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == tmp[0]["name"]]
    assert "emptyDir" in volume
    assert worker_settings(docs)["NEARDUP_DATA_DIR"].startswith("/tmp/")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_readiness_asks_health_liveness_only_whether_the_worker_answers(scenario):
    """Readiness is /health (Kafka and Redis reachable), liveness /live (no dependency: a
    restart does not end an outage; tests/integration/worker/test_probes.py runs both)."""
    docs = manifests(scenario)
    c = worker_container(docs)
    (port,) = c["ports"]
    assert port["containerPort"] == int(worker_settings(docs)["NEARDUP_WEB_PORT"])
    budget = {}
    for kind, path in (("readinessProbe", "/health"), ("livenessProbe", "/live")):
        probe = c[kind]
        assert probe["httpGet"] == {"path": path, "port": port["name"]}
        budget[kind] = (
            probe["initialDelaySeconds"] + probe["failureThreshold"] * probe["periodSeconds"]
        )
    assert budget["livenessProbe"] > 2 * budget["readinessProbe"]


def test_replicas_never_exceed_partitions():
    docs = manifests()
    partitions = int(worker_settings(docs)["NEARDUP_TOPIC_PARTITIONS"])
    assert one(docs, "Deployment")["spec"]["replicas"] <= partitions
    assert one(manifests(replicaCount=partitions), "Deployment")["spec"]["replicas"] == partitions
    assert "consumer group" in refused(replicaCount=partitions + 1)
    assert "maxReplicas" in refused(autoscaling={"hpa": {"enabled": True, "maxReplicas": 99}})
    err = refused(autoscaling={"keda": {"enabled": True, "maxReplicaCount": partitions + 1}})
    assert "maxReplicaCount" in err
    small = manifests(kafka={"topics": {"partitions": 1}}, replicaCount=1)
    assert one(small, "Deployment")["spec"]["replicas"] == 1
    values = (ROOT / "helm" / "neardup" / "values.yaml").read_text()
    reason = values[: values.index("\nreplicaCount:")].rsplit("\n\n", 1)[-1]
    assert "consumer group" in reason and "partition" in reason


def test_topics_are_replicated_by_default_and_once_only_in_development():
    settings = worker_settings(manifests())
    assert (
        settings["NEARDUP_TOPIC_REPLICATION"],
        settings["NEARDUP_TOPIC_MIN_INSYNC_REPLICAS"],
    ) == (
        "3",
        "2",
    )
    dev = worker_settings(manifests("dev"))
    assert dev["NEARDUP_TOPIC_REPLICATION"] == "1"
    err = refused(kafka={"topics": {"replication": 2, "minInsyncReplicas": 3}})
    assert "minInsyncReplicas" in err


def test_secrets_are_referenced_never_inlined():
    docs = manifests("production")
    assert "Secret" not in kinds(docs), "production values must not make the chart hold secrets"
    env = {e["name"]: e for e in worker_container(docs)["env"]}
    expected = {
        "NEARDUP_KAFKA_SASL_PASSWORD": ("neardup-kafka-user", "password"),
        "NEARDUP_REDIS_PASSWORD": ("neardup-redis", "redis-password"),
        "NEARDUP_CHECK_TOKEN": ("neardup-check", "token"),
    }
    assert set(expected) == SECRET_SETTINGS, "a new secret setting needs a Secret reference"
    for name, (secret, key) in expected.items():
        assert env[name]["valueFrom"]["secretKeyRef"] == {"name": secret, "key": key}
        assert "value" not in env[name]
    data = settings_config_map(docs)["data"]
    assert not SECRET_SETTINGS & data.keys()
    assert "@" not in data["NEARDUP_REDIS_URL"]
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    mounted = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert mounted == {"kafka-cluster-ca", "redis-ca"}
    assert data["NEARDUP_KAFKA_SSL_CAFILE"].startswith("/etc/neardup/kafka-tls/")
    assert data["NEARDUP_REDIS_SSL_CA_CERTS"].startswith("/etc/neardup/redis-tls/")


def test_development_secret_is_created_from_values_and_flagged():
    out = render("dev")
    docs = out["manifests"]
    secret = one(docs, "Secret")
    assert set(secret["data"]) == {"kafka-sasl-password", "redis-password", "check-token"}
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]["name"]
        for e in worker_container(docs)["env"]
        if "valueFrom" in e
    }
    assert set(refs) == SECRET_SETTINGS and set(refs.values()) == {secret["metadata"]["name"]}
    assert "WARNING" in out["notes"] and "development" in out["notes"]
    assert "not both" in refused(kafka={"sasl": {"existingSecret": "s", "password": "p"}})
    assert "credentials" in refused(redis={"url": "redis://:pw@redis:6379/0"})


def test_web_views_are_closed_unless_opened():
    """A worker without a token on the pod's address refuses to start: with no Secret named,
    the chart generates a token (a random one, into its own Secret) instead of running open;
    ``check.open`` is the only way to serve the views without one, and says so."""
    out = render()
    docs = out["manifests"]
    secret = one(docs, "Secret")
    token = base64.b64decode(secret["data"]["check-token"]).decode()
    assert len(token) >= 32 and token.isalnum(), token
    again = one(render(set_json="{}")["manifests"], "Secret")["data"]["check-token"]
    assert again != secret["data"]["check-token"], "each fresh install generates its own token"
    env = {e["name"]: e for e in worker_container(docs)["env"]}
    ref = env["NEARDUP_CHECK_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": secret["metadata"]["name"], "key": "check-token"}
    assert settings_config_map(docs)["data"]["NEARDUP_WEB_OPEN"] == "false"
    assert "Bearer $TOKEN" in out["notes"] and "generated" in out["notes"]

    opened = render(set_json=json.dumps({"check": {"open": True}}))
    assert "Secret" not in kinds(opened["manifests"])
    env = {e["name"] for e in worker_container(opened["manifests"]).get("env", [])}
    assert "NEARDUP_CHECK_TOKEN" not in env
    assert settings_config_map(opened["manifests"])["data"]["NEARDUP_WEB_OPEN"] == "true"
    assert "without a token" in opened["notes"]
    assert "without a token" in refused(check={"open": True, "auth": {"existingSecret": "s"}})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_chart_group_timeouts_suit_apache_kafka(scenario):
    """Apache Kafka refuses a member whose session timeout is outside the broker's bounds, and
    a heartbeat slower than a third of it risks the member's eviction between two beats."""
    settings = worker_settings(manifests(scenario))
    session = float(settings["NEARDUP_KAFKA_SESSION_TIMEOUT_S"])
    heartbeat = float(settings["NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S"])
    low, high = KAFKA_SESSION_TIMEOUT_BOUNDS_S
    assert low <= session <= high, session
    assert heartbeat <= session / 3, (heartbeat, session)


def test_chart_reaches_the_replica_wait(monkeypatch):
    defaults = worker_settings(manifests())
    assert defaults["NEARDUP_REDIS_WAIT_REPLICAS"] == "0"
    env = worker_settings(manifests(redis={"waitReplicas": 1, "waitTimeoutMs": 500}))
    settings = settings_from(
        {k: v for k, v in env.items() if k.startswith("NEARDUP_")}, monkeypatch
    )
    assert (settings.redis_wait_replicas, settings.redis_wait_timeout_ms) == (1, 500)
    # the worker would refuse it at start; the chart refuses it before anything is deployed
    assert "shorter than redis.timeoutS" in refused(
        redis={"waitReplicas": 1, "waitTimeoutMs": 5000}
    )


def test_prometheus_scraping():
    docs = manifests()
    annotations = one(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert annotations["prometheus.io/port"] == worker_settings(docs)["NEARDUP_WEB_PORT"]
    assert "ServiceMonitor" not in kinds(docs), "optional, off by default"
    prod = manifests("production")
    sm = one(prod, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    svc = one(prod, "Service")
    assert all(
        svc["metadata"]["labels"][k] == v for k, v in sm["spec"]["selector"]["matchLabels"].items()
    )
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {p["name"] for p in svc["spec"]["ports"]}


def test_keda_scales_on_the_workers_consumer_lag():
    docs = manifests("production")
    settings = worker_settings(docs)
    so = one(docs, "ScaledObject")
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    assert so["spec"]["scaleTargetRef"]["name"] == one(docs, "Deployment")["metadata"]["name"]
    assert so["spec"]["maxReplicaCount"] <= int(settings["NEARDUP_TOPIC_PARTITIONS"])
    (trigger,) = so["spec"]["triggers"]
    meta = trigger["metadata"]
    assert trigger["type"] == "kafka"
    assert meta["consumerGroup"] == settings["NEARDUP_CONSUMER_GROUP"]
    assert meta["topic"] == settings["NEARDUP_INPUT_TOPIC"]
    assert meta["bootstrapServers"] == settings["NEARDUP_KAFKA_BOOTSTRAP"]
    assert meta["lagThreshold"] == "2000" and meta["allowIdleConsumers"] == "false"
    assert (meta["sasl"], meta["tls"]) == ("scram_sha512", "enable")
    auth = one(docs, "TriggerAuthentication")
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    refs = {r["parameter"]: (r["name"], r["key"]) for r in auth["spec"]["secretTargetRef"]}
    assert refs["password"] == ("neardup-kafka-user", "password")
    assert refs["ca"] == ("kafka-cluster-ca", "ca.crt")
    assert "replicas" not in one(docs, "Deployment")["spec"], "the autoscaler owns replicas"
    assert "HorizontalPodAutoscaler" not in kinds(docs)


def test_autoscalers_are_optional_and_exclusive():
    assert not kinds(manifests()) & {"HorizontalPodAutoscaler", "ScaledObject"}
    docs = manifests("hpa-mtls")
    hpa = one(docs, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert hpa["spec"]["maxReplicas"] <= int(worker_settings(docs)["NEARDUP_TOPIC_PARTITIONS"])
    assert "exclusive" in refused(autoscaling={"hpa": {"enabled": True}, "keda": {"enabled": True}})


def test_disruption_budget_and_resources():
    docs = manifests()
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1" and pdb["spec"]["maxUnavailable"] == 1
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    resources = worker_container(docs)["resources"]
    assert {"cpu", "memory"} <= resources["requests"].keys()
    assert {"cpu", "memory"} <= resources["limits"].keys()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_chart_settings_are_real_and_valid(scenario, monkeypatch, tmp_path):
    docs = manifests(scenario)
    everything = worker_settings(docs)
    env = {k: v for k, v in everything.items() if k.startswith("NEARDUP_")}
    # A setting naming a file the chart mounts is read from the rendered file (the worker
    # validates the namespaces file at start, as Settings() does here).
    for n, (path, text) in enumerate(sorted(mounted_files(docs).items())):
        local = tmp_path / f"{n}-{Path(path).name}"
        local.write_text(text)
        env = {k: str(local) if v == path else v for k, v in env.items()}
    extra_env: set[str] = set()
    if scenario != "defaults":
        proc = run_check("yaml2json", f"deploy/helm-values/{scenario}.yaml")
        extra_env = {e["name"] for e in json.loads(proc.stdout).get("extraEnv", [])}
    assert everything.keys() - env.keys() <= extra_env, "only extraEnv may add other variables"
    assert env.keys() <= SETTINGS.keys(), f"not in Settings: {env.keys() - SETTINGS.keys()}"
    settings_from(env, monkeypatch)  # pydantic validates every value the chart produces


def test_chart_exposes_every_setting_and_names_only_real_ones():
    exposed: set[str] = set()
    for scenario in SCENARIOS:
        exposed |= worker_settings(manifests(scenario)).keys()
    # web_host stays 0.0.0.0 in a pod: probes and Prometheus come from outside the container.
    assert SETTINGS.keys() - exposed == {"NEARDUP_WEB_HOST"}
    templates = ROOT / "helm" / "neardup"
    named: set[str] = set()
    for path in [*templates.rglob("*.yaml"), *templates.rglob("*.tpl"), *templates.rglob("*.txt")]:
        named |= set(re.findall(r"NEARDUP_[A-Z0-9_]+", path.read_text()))
    assert named <= SETTINGS.keys(), (
        f"not in neardup.stream.worker.config.Settings: {named - SETTINGS.keys()}"
    )


def test_every_value_is_documented():
    """Each leaf of values.yaml has a comment right above it, or belongs to a value whose
    helm-docs comment ("# -- ...") documents it as a whole (resources, securityContext, ...)."""
    lines = (ROOT / "helm" / "neardup" / "values.yaml").read_text().splitlines()
    keys = []  # (line number, indent, name)
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([A-Za-z][\w.-]*):", line)
        if m:
            keys.append((i, len(m.group(1)), m.group(2)))
    open_parents: list[tuple[int, bool]] = []  # (indent, documented as a whole)
    undocumented = []
    for n, (i, indent, name) in enumerate(keys):
        while open_parents and open_parents[-1][0] >= indent:
            open_parents.pop()
        first = i  # first line of the comment block right above the key
        while first > 0 and lines[first - 1].strip().startswith("#"):
            first -= 1
        is_parent = n + 1 < len(keys) and keys[n + 1][1] > indent
        if not is_parent and first == i and not any(d for _, d in open_parents):
            undocumented.append(name)
        open_parents.append((indent, first < i and lines[first].strip().startswith("# --")))
    assert not undocumented, f"values without a comment: {undocumented}"


# helm's --set reads 3 as an integer and leaves 0.9 a string; these are what it passes
SET_DECIMALS = {
    "similarity": {
        "threshold": "0.9",
        "recall": "0.95",
        "shortThreshold": "1",
        "retentionS": "86400.5",
    },
    "redis": {"timeoutS": "2.5"},
    "kafka": {"sessionTimeoutS": "45", "heartbeatIntervalS": "3.5"},
    "worker": {"retryBackoffMaxS": "7.5"},
}


def test_decimal_values_given_by_helm_set_render_as_the_worker_reads_them():
    """`helm --set similarity.threshold=0.9` passes the string "0.9": accepted, and the worker's
    environment gets the same value a values file's 0.9 gives it."""
    env = worker_settings(manifests(**SET_DECIMALS))
    assert (env["NEARDUP_THRESHOLD"], env["NEARDUP_RECALL"]) == ("0.9", "0.95")
    assert (env["NEARDUP_SHORT_THRESHOLD"], env["NEARDUP_RETENTION_S"]) == ("1", "86400.5")
    assert (env["NEARDUP_REDIS_TIMEOUT_S"], env["NEARDUP_RETRY_BACKOFF_MAX_S"]) == ("2.5", "7.5")
    assert env["NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S"] == "3.5"
    assert worker_settings(manifests(similarity={"threshold": 0.9}))["NEARDUP_THRESHOLD"] == "0.9"


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"similarity": {"threshold": "1.5"}}, "threshold"),
        ({"similarity": {"threshold": "0"}}, "threshold"),
        ({"similarity": {"threshold": "ninety"}}, "threshold"),
        ({"similarity": {"recall": "1"}}, "recall"),
        ({"redis": {"timeoutS": "0.0"}}, "timeoutS"),
        ({"redis": {"timeoutS": "-2"}}, "timeoutS"),
    ],
)
def test_decimal_strings_out_of_range_are_refused_naming_the_value(values, named):
    assert named in refused(**values)
