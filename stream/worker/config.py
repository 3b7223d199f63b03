"""Worker settings: environment variables ``NEARDUP_*``, validated once at start, then frozen.

Secrets (Kafka SASL password, Redis password, the /check bearer token) are ``SecretStr`` and
never appear in logs or ``repr``. Every setting: docs/configuration.md.
"""

from __future__ import annotations

import difflib
import ipaddress
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from neardup.stream.errors import ClosedWebError
from neardup.stream.names import NAMESPACE_RE
from neardup.stream.namespaces import policies as namespaces
from neardup.stream.namespaces.policy import MAX_SHARDS, Policy


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="NEARDUP_", frozen=True, extra="ignore")

    # Kafka
    kafka_bootstrap: str = Field("localhost:9092", description="comma-separated host:port list")
    input_topic: str = "articles"
    verdict_topic: str = "verdicts"
    dlq_topic: str = "articles.dlq"
    topic_partitions: int = Field(8, ge=1, description="partitions when neardup creates topics")
    topic_replication: int | None = Field(
        None,
        ge=1,
        description="replication factor when neardup creates topics (unset: 3, or the number "
        "of brokers when the cluster has fewer)",
    )
    topic_min_insync_replicas: int | None = Field(
        None,
        ge=1,
        description="min.insync.replicas of the topics neardup creates (unset: one less than "
        "the replication factor, at least 1)",
    )
    consumer_group: str = "neardup"
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_cafile: str | None = None
    kafka_ssl_certfile: str | None = None
    kafka_ssl_keyfile: str | None = None
    kafka_session_timeout_s: float = Field(30.0, gt=0)
    kafka_heartbeat_interval_s: float = Field(3.0, gt=0)
    kafka_fetch_max_wait_ms: int = Field(20, ge=1, le=10_000)

    # Redis
    redis_url: str = Field("redis://localhost:6379/0", description="redis:// or rediss://")
    redis_password: SecretStr | None = None
    redis_ssl_ca_certs: str | None = None
    redis_timeout_s: float = Field(5.0, gt=0)
    redis_shard_bits: int = Field(16, ge=1, le=24)
    redis_cluster: bool = Field(False, description="redis_url is a seed node of a Redis Cluster")
    redis_wait_replicas: int = Field(
        0,
        ge=0,
        description="replicas that must acknowledge each batch's registrations (WAIT) before "
        "its verdicts are published; 0 = do not wait (a failover can lose the last writes)",
    )
    redis_wait_timeout_ms: int = Field(1000, ge=1, description="how long that WAIT may take")

    # Worker
    web_port: int = Field(6066, ge=0, le=65535)
    web_host: str = "0.0.0.0"  # noqa: S104 - a pod serves probes and metrics on all interfaces
    batch_size: int = Field(256, ge=1, le=10_000)
    batch_within_ms: int = Field(20, ge=1)
    max_message_bytes: int = Field(1_000_000, ge=1024)
    retry_backoff_max_s: float = Field(5.0, gt=0)
    check_token: SecretStr | None = None
    web_open: bool = Field(
        False,
        description="serve /check, takedowns and the read API without a token on "
        "an address other than loopback (behind a proxy that authenticates); without it such a "
        "worker refuses to start",
    )
    check_max_body_bytes: int = Field(1_000_000, ge=1024)
    check_body_timeout_s: float = Field(
        5.0,
        gt=0,
        le=600,
        description="longest time a `/check` body may take to arrive (from the end of its "
        "headers); slower bodies are answered 408 and never wait for a check",
    )
    data_dir: str = "/tmp/neardup"  # noqa: S108 - faust's local state dir; set it in production
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["text", "json"] = Field(
        "text", description="text (one line: time, level, logger, message) or json"
    )

    # Similarity (the default namespace policy)
    namespace: str = "default"
    threshold: float = Field(0.8, gt=0, le=1)
    measure: Literal["jaccard", "containment"] = "jaccard"
    recall: float = Field(0.99, gt=0, lt=1)
    short_threshold: float = Field(0.8, gt=0, le=1)
    short_tokens: int = Field(30, ge=0)
    bucket_cap: int = Field(256, ge=1)
    retention_s: float | None = Field(None, gt=0)
    deleted_ttl_s: float = Field(7 * 86400.0, gt=0)
    max_matches: int = Field(10, ge=1)
    facts: Literal["strict", "relaxed"] = "strict"
    facts_tokens: int = Field(60, ge=0)
    boilerplate_min_docs: int = Field(3, ge=0)
    boilerplate_lines: int = Field(100_000, ge=1)
    # comma-separated sources whose documents teach boilerplate; unset: every source
    boilerplate_sources: str | None = None
    keep_text: bool = True
    explain: bool = False
    shards: int = Field(
        1,
        ge=1,
        le=MAX_SHARDS,
        description="shard groups of a new namespace's buckets on Redis: 1 keeps a namespace in "
        "one Redis Cluster slot (one primary); N > 1 spreads its buckets over N slots, past "
        "one primary's ceiling, at the cost of more round trips (see *When to shard* in "
        "docs/operations.md). Part of the scheme: an existing namespace changes it by a rebuild",
    )
    namespaces_file: str | None = (
        None  # TOML of per-namespace policies (neardup.stream.namespaces.policies)
    )

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str) -> str:
        if not NAMESPACE_RE.fullmatch(v):
            raise ValueError(f"must match {NAMESPACE_RE.pattern}")
        return v

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, v: str) -> str:
        if not v.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return v

    @model_validator(mode="after")
    def _sasl(self) -> Settings:
        if self.kafka_security_protocol.startswith("SASL") and not (
            self.kafka_sasl_username and self.kafka_sasl_password
        ):
            raise ValueError(
                "NEARDUP_KAFKA_SASL_USERNAME and NEARDUP_KAFKA_SASL_PASSWORD are required "
                f"with NEARDUP_KAFKA_SECURITY_PROTOCOL={self.kafka_security_protocol}"
            )
        return self

    @model_validator(mode="after")
    def _wait_within_timeout(self) -> Settings:
        if self.redis_wait_replicas and self.redis_wait_timeout_ms >= 1000 * self.redis_timeout_s:
            raise ValueError(
                "NEARDUP_REDIS_WAIT_TIMEOUT_MS must be shorter than NEARDUP_REDIS_TIMEOUT_S "
                "(the client would give up on the WAIT before the server answers)"
            )
        return self

    def policy(self) -> Policy:
        return Policy(
            threshold=self.threshold,
            measure=self.measure,
            recall=self.recall,
            short_threshold=self.short_threshold,
            short_tokens=self.short_tokens,
            bucket_cap=self.bucket_cap,
            retention_s=self.retention_s,
            deleted_ttl_s=self.deleted_ttl_s,
            max_matches=self.max_matches,
            facts=self.facts,
            facts_tokens=self.facts_tokens,
            boilerplate_min_docs=self.boilerplate_min_docs,
            boilerplate_lines=self.boilerplate_lines,
            boilerplate_sources=None
            if self.boilerplate_sources is None
            else tuple(x.strip() for x in self.boilerplate_sources.split(",") if x.strip()),
            keep_text=self.keep_text,
            explain=self.explain,
            shards=self.shards,
        )

    @model_validator(mode="after")
    def _namespaces(self) -> Settings:
        if self.namespaces_file:
            self.policies()  # every error names the file, the namespace and the field
        return self

    def policies(self) -> dict[str, Policy]:
        """The namespaces file's policies (each the defaults with its table), or none."""
        if not self.namespaces_file:
            return {}
        return namespaces.load(self.namespaces_file, self.policy())

    def bootstrap_servers(self) -> list[str]:
        return [s.strip() for s in self.kafka_bootstrap.split(",") if s.strip()]


WebMode = Literal["token", "loopback", "open"]


def is_loopback(host: str) -> bool:
    """Whether an address to listen on takes connections from this machine only. A name other
    than ``localhost`` (and ``0.0.0.0``, ``::``) may be reachable from elsewhere: not loopback."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def web_mode(settings: Settings) -> WebMode:
    """Who may use the worker's takedowns, read API and ``/check``: holders of the token
    (``token``), this machine (``loopback``: no token, listening on loopback only), or anyone,
    because the operator said so (``open``: ``NEARDUP_WEB_OPEN``).

    No token on another address without ``NEARDUP_WEB_OPEN`` raises :class:`ClosedWebError`:
    open by default would let anyone who reaches the port read, register and take down articles.
    """
    if settings.check_token is not None:
        return "token"
    if is_loopback(settings.web_host):
        return "loopback"
    if settings.web_open:
        return "open"
    raise ClosedWebError(
        f"NEARDUP_WEB_HOST={settings.web_host} is not a loopback address and no "
        "NEARDUP_CHECK_TOKEN is set: anyone reaching the port could read, register and take "
        "down articles; set NEARDUP_CHECK_TOKEN, listen on 127.0.0.1, or set "
        "NEARDUP_WEB_OPEN=true to serve it open deliberately"
    )


def web_mode_line(settings: Settings) -> str:
    """The start-up log line that says which :func:`web_mode` the worker runs in."""
    where = f"{settings.web_host}:{settings.web_port}"
    mode = web_mode(settings)
    if mode == "token":
        ignored = " (NEARDUP_WEB_OPEN is ignored)" if settings.web_open else ""
        return (
            f"web views on {where}: mode token: /check, takedowns and the read API require "
            f"the bearer token (NEARDUP_CHECK_TOKEN){ignored}"
        )
    if mode == "loopback":
        return (
            f"web views on {where}: mode loopback only: no token; /check, takedowns and the "
            "read API answer this machine only"
        )
    return (
        f"web views on {where}: mode open by NEARDUP_WEB_OPEN: no token; anyone who reaches "
        "the port may check, register, read and take down articles"
    )


# NEARDUP_* variables that are not settings of the worker: the project's own tooling (the test
# and benchmark harness's server binaries and endpoints)
TOOLING_VARIABLES = frozenset(
    {"NEARDUP_REDIS_BIN", "NEARDUP_TANSU_BIN", "NEARDUP_JAVA", "NEARDUP_KAFKA_LIBS",
     "NEARDUP_APACHE_KAFKA_BOOTSTRAP"}
)  # fmt: skip


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """A sentence for every ``NEARDUP_*`` variable that is no setting (a misspelt
    ``NEARDUP_TRESHOLD`` would otherwise be ignored in silence), naming the closest setting."""
    known = {"NEARDUP_" + name.upper() for name in Settings.model_fields}
    out = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith("NEARDUP_") or upper in known or upper in TOOLING_VARIABLES:
            continue
        if upper.startswith("NEARDUP_TEST_"):
            continue
        names = sorted(k[len("NEARDUP_") :] for k in known)
        close = difflib.get_close_matches(upper[len("NEARDUP_") :], names, n=1, cutoff=0.75)
        hint = f"; did you mean NEARDUP_{close[0]}?" if close else ""
        out.append(f"unknown setting {name} is ignored{hint}")
    return out


__all__ = [
    "TOOLING_VARIABLES",
    "ClosedWebError",
    "Settings",
    "WebMode",
    "is_loopback",
    "unknown_variables",
    "web_mode",
    "web_mode_line",
]
