"""docker-compose.yml as compose reads it, for tests that check what compose would run without a
container engine.

``docker-compose config`` (v1.29+, or ``docker compose config``) needs no daemon: it interpolates
the variables, merges the anchors and says what is wrong, as ``up`` would. The tests give it the
variables themselves (an empty ``--env-file``, so a developer's ``.env`` changes nothing) and
read its YAML. :func:`shell_script` turns a service's ``bash -c`` command back into the script
its shell runs, and :func:`ports` reads both syntaxes compose prints published ports in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "COMPOSE_FILE",
    "SECRETS",
    "Port",
    "compose_command",
    "config",
    "ports",
    "run_config",
    "shell_script",
]

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
# The variables docker-compose.yml requires (``${NAME:?...}``): stand-ins for the tests.
SECRETS: Mapping[str, str] = {
    "NEARDUP_CHECK_TOKEN": "compose-test-token",
    "NEARDUP_REDIS_PASSWORD": "compose-test-password",
}
INSTALL_HINT = (
    "docker-compose not found: install it with `bash scripts/validate_deploy.sh --install-only` "
    "(Debian's docker-compose; no daemon is needed)"
)
# Interpolation variables of docker-compose.yml read from the caller's environment otherwise.
_COMPOSE_VARIABLES = ("KAFKA_HOST_PORT", "REDIS_HOST_PORT", "COMPOSE_PROJECT_NAME")


def compose_command() -> list[str]:
    """``docker-compose``, else ``docker compose`` (v2 as a plugin), else an error saying how
    to install it."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    raise RuntimeError(INSTALL_HINT)


def run_config(
    env: Mapping[str, str], *args: str, profile: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``config [args]`` with exactly ``env`` as compose's variables (none from the caller's
    shell or from a ``.env`` file)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("NEARDUP_") and k not in _COMPOSE_VARIABLES
    }
    with tempfile.NamedTemporaryFile("w", suffix=".env") as empty:
        cmd = [*compose_command(), "--env-file", empty.name, "-f", str(COMPOSE_FILE)]
        if profile:
            cmd += ["--profile", profile]
        return subprocess.run(
            [*cmd, "config", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**base, **env},
            check=False,
            timeout=120,
        )


def config(env: Mapping[str, str] | None = None, profile: str | None = None) -> dict[str, Any]:
    """The configuration compose runs, with :data:`SECRETS` and ``env`` as its variables."""
    proc = run_config({**SECRETS, **(env or {})}, profile=profile)
    if proc.returncode != 0:
        raise RuntimeError(f"docker-compose config failed: {proc.stderr[-2000:]}")
    loaded: dict[str, Any] = yaml.safe_load(proc.stdout)
    return loaded


@dataclass(frozen=True)
class Port:
    """A published port: the host address it is bound to ("" = every interface)."""

    host_ip: str
    published: int
    target: int


def ports(service: Mapping[str, Any]) -> list[Port]:
    """A service's published ports from ``config``'s output: v1 prints a port bound to an
    address as ``"127.0.0.1:6066:6066/tcp"`` and others as a mapping, v2 always a mapping."""
    out = []
    for entry in service.get("ports", []):
        if isinstance(entry, Mapping):
            ip = str(entry.get("host_ip", ""))
            out.append(Port(ip, int(entry["published"]), int(entry["target"])))
            continue
        spec = str(entry).split("/", 1)[0]
        parts = spec.rsplit(":", 2)
        ip = parts[0] if len(parts) == 3 else ""
        out.append(Port(ip, int(parts[-2]), int(parts[-1])))
    return out


def shell_script(service: Mapping[str, Any]) -> str:
    """The script of a service that runs ``<shell> -c`` with its command as the script: as the
    shell receives it, ``$$`` (compose's escaped ``$``, as ``config`` prints it) back to ``$``."""
    entrypoint: Sequence[str] = service.get("entrypoint") or []
    command: Sequence[str] = service.get("command") or []
    if len(entrypoint) != 2 or entrypoint[1] != "-c" or len(command) != 1:
        raise ValueError(f"not a `shell -c script` service: {entrypoint} {command}")
    return str(command[0]).replace("$$", "$")
