"""The process handling of harness/services.py on a tiny TCP server that tells its pid, so these
run without Redis or a broker: start, readiness, the pid check, restart, freeze, stop, the port
race, errors with the log's tail, and servers that die with the process that started them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import port_for
import psutil
import pytest

from harness import services
from harness.services import HOST, Service, ServiceError

# Exits with the code in argv[2] if not 0; else answers each connection with its pid.
SERVER = textwrap.dedent(
    """
    import os, socket, sys
    print("fake server starting", flush=True)
    if sys.argv[2] != "0":
        sys.exit(int(sys.argv[2]))
    with socket.create_server(("127.0.0.1", int(sys.argv[1]))) as server:
        while True:
            conn, _ = server.accept()
            conn.sendall(str(os.getpid()).encode())
            conn.close()
    """
)


def probe(port: int) -> tuple[str, int | None]:
    with socket.create_connection((HOST, port), timeout=2) as sock:
        return "fake 1.0", int(sock.recv(32))


def fake(
    tmp_path: Path,
    exit_code: int = 0,
    probe: Callable[[int], tuple[str, int | None]] = probe,
    detach: bool = False,
) -> Service:
    def argv(port: int) -> list[str]:
        return [sys.executable, "-c", SERVER, str(port), str(exit_code)]

    binary = Path(sys.executable)
    return Service("fake", binary, services.free_port(), tmp_path, argv, probe, detach)


@pytest.fixture
def started() -> Iterator[list[Service]]:
    """Services a test starts; each is stopped after it."""
    made: list[Service] = []
    yield made
    for service in made:
        service.stop(kill=True)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_start_restart_freeze_and_stop(tmp_path: Path, started: list[Service]) -> None:
    service = fake(tmp_path)
    started.append(service.start())
    first = service.pid
    assert first is not None and service.is_running() and service.version == "fake 1.0"
    assert probe(service.port)[1] == first
    service.restart(kill=True)
    assert service.pid not in (None, first) and not alive(first)
    assert probe(service.port)[1] == service.pid
    with service.frozen():
        assert psutil.Process(service.pid).status() == psutil.STATUS_STOPPED
    assert psutil.Process(service.pid).status() != psutil.STATUS_STOPPED
    last = service.pid
    service.stop()
    assert not service.is_running() and service.pid is None and not alive(last)
    service.stop()  # idempotent


def test_a_server_answering_with_another_pid_is_refused_and_stopped(
    tmp_path: Path, started: list[Service]
) -> None:
    service = fake(tmp_path, probe=lambda port: ("fake", os.getpid()))
    started.append(service)
    with pytest.raises(ServiceError, match=f"served by pid {os.getpid()}"):
        service.start()
    assert not service.is_running()


def test_an_exit_at_startup_says_the_code_and_the_log_tail(
    tmp_path: Path, started: list[Service]
) -> None:
    service = fake(tmp_path, exit_code=3)
    started.append(service)
    with pytest.raises(ServiceError, match="exited with code 3") as err:
        service.start()
    assert "fake server starting" in str(err.value)


def test_no_answer_in_time_says_the_last_probe_error(
    tmp_path: Path, started: list[Service]
) -> None:
    def never(port: int) -> tuple[str, int | None]:
        raise ConnectionRefusedError("not yet")

    service = fake(tmp_path, probe=never)
    started.append(service)
    with pytest.raises(ServiceError, match=r"no answer within 1s \(ConnectionRefusedError"):
        service.start(timeout_s=1)
    assert not service.is_running()


def test_a_port_taken_before_the_start_is_picked_again_unless_it_was_given(
    tmp_path: Path, started: list[Service]
) -> None:
    with socket.create_server((HOST, 0)) as squatter:
        taken = squatter.getsockname()[1]
        service = fake(tmp_path)
        service.port = taken
        with pytest.raises(ServiceError, match="already in use"):
            services._start(service, port_given=True)
        started.append(services._start(service, port_given=False))
    assert service.port != taken and probe(service.port)[1] == service.pid


def test_free_ports_are_outside_the_ephemeral_range() -> None:
    ephemeral = port_for.ephemeral.port_ranges()
    for _ in range(20):
        port = services.free_port()
        assert not any(lo <= port <= hi for lo, hi in ephemeral)


CHILD = textwrap.dedent(
    """
    import socket, sys, threading, time
    from pathlib import Path
    from harness.services import HOST, Service, free_port

    def probe(port):
        with socket.create_connection((HOST, port), timeout=2) as sock:
            return "fake", int(sock.recv(32))

    def argv(port):
        return [sys.executable, "-c", sys.argv[4], str(port), "0"]

    where, detach = Path(sys.argv[1]), sys.argv[2] == "detach"
    service = Service("fake", Path(sys.executable), free_port(), where, argv, probe, detach)
    if sys.argv[3] == "killed":
        print(service.start().pid, flush=True)
        time.sleep(60)
    else:  # from another thread, which the kernel's parent-death signal does not follow
        (starter := threading.Thread(target=service.start)).start()
        starter.join()
        print(service.pid, flush=True)
    """
)


@pytest.mark.parametrize("end", ["exits", "killed"])
@pytest.mark.parametrize("how", ["attached", "detach"])
def test_a_server_ends_with_its_starter_unless_detached(tmp_path: Path, how: str, end: str) -> None:
    """The starter exits (its exit hook stops the server) or is SIGKILLed (the kernel ends the
    server): a detached server lives on either way."""
    env = {**os.environ, "PYTHONPATH": str(Path(services.__file__).parent.parent)}
    cmd = [sys.executable, "-c", CHILD, str(tmp_path), how, end, SERVER]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as child:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        if end == "killed":
            child.send_signal(signal.SIGKILL)
    try:
        deadline = time.monotonic() + 5
        while alive(pid) and how == "attached" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(pid) == (how == "detach")
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
