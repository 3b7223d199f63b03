"""Readiness probes for the local servers, spoken on the wire with no client library.

A probe answers "is *this* server up and the right kind": Redis must answer PING and support
``FUNCTION`` (7+); the broker must answer ApiVersions and advertise the address we gave it (else
clients would be sent elsewhere after bootstrapping). Both return ``(version, pid or None)`` so a
caller can check that the answer came from the process it started, not from a stranger on the
port.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["HOST", "ServiceError", "probe_kafka", "probe_redis"]

HOST = "127.0.0.1"


class ServiceError(RuntimeError):
    """A server could not be found, started, or did not answer its readiness probe."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by server")
        buf += chunk
    return bytes(buf)


def _recv_line(sock: socket.socket) -> bytes:
    buf = bytearray()
    while not buf.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("connection closed by server")
        buf += chunk
    return bytes(buf[:-2])


def _resp_command(port: int, *args: str, timeout_s: float = 2.0) -> bytes:
    """Send one RESP command; return the first reply line (``+PONG``, ``-ERR ...``, ``$12``...)."""
    payload = f"*{len(args)}\r\n".encode()
    for arg in args:
        raw = arg.encode()
        payload += b"$%d\r\n%s\r\n" % (len(raw), raw)
    with socket.create_connection((HOST, port), timeout=timeout_s) as sock:
        sock.sendall(payload)
        line = _recv_line(sock)
        if line.startswith(b"$") and int(line[1:]) >= 0:
            return _recv_exact(sock, int(line[1:]) + 2)[:-2]
        return line


def probe_redis(port: int) -> tuple[str, int | None]:
    """PING, then check FUNCTION support; returns the server's version and process id."""
    if _resp_command(port, "PING") != b"+PONG":
        raise ConnectionError("PING did not answer PONG")
    info = _resp_command(port, "INFO", "server").decode(errors="replace")
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    # valkey also reports a Redis-compatible redis_version (7.2.4): prefer its own.
    version = fields.get("valkey_version") or fields.get("redis_version") or "?"
    reply = _resp_command(port, "FUNCTION", "STATS")
    if reply.startswith(b"-"):
        raise ServiceError(f"server {version} lacks FUNCTION support (needs Redis 7+): {reply!r}")
    return version, int(fields["process_id"]) if "process_id" in fields else None


def _kafka_request(
    sock: socket.socket, api_key: int, version: int, corr: int, body: bytes
) -> bytes:
    client_id = b"neardup-services"
    header = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id
    sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    response = _recv_exact(sock, size)
    (got_corr,) = struct.unpack(">i", response[:4])
    if got_corr != corr:
        raise ConnectionError(f"correlation id {got_corr} != {corr}")
    return response[4:]


def probe_kafka(port: int) -> tuple[str, int | None]:
    """ApiVersions v0 and Metadata v0: the broker answers and advertises 127.0.0.1:port.

    The Kafka protocol does not tell the broker's pid: the second value is always None.
    """
    with socket.create_connection((HOST, port), timeout=2.0) as sock:
        api = _kafka_request(sock, api_key=18, version=0, corr=1, body=b"")
        (error_code, n_apis) = struct.unpack(">hi", api[:6])
        if error_code != 0:
            raise ConnectionError(f"ApiVersions error code {error_code}")
        meta = _kafka_request(sock, api_key=3, version=0, corr=2, body=struct.pack(">i", 0))
    (n_brokers,) = struct.unpack(">i", meta[:4])
    advertised = []
    pos = 4
    for _ in range(n_brokers):
        (_node_id, host_len) = struct.unpack(">ih", meta[pos : pos + 6])
        host = meta[pos + 6 : pos + 6 + host_len].decode()
        (bport,) = struct.unpack(">i", meta[pos + 6 + host_len : pos + 10 + host_len])
        advertised.append((host, bport))
        pos += 10 + host_len
    if (HOST, port) not in advertised:
        raise ServiceError(f"broker advertises {advertised}, expected {(HOST, port)}")
    return f"{n_apis} APIs", None
