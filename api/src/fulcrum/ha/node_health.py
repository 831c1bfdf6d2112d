"""fulcrum-node-health: keepalived's vrrp_script for this node's own health.

keepalived runs it every `interval` seconds; `fall` failures in a row put every VRRP instance in
FAULT, which sends a priority-0 advert, so the peer takes the VIPs at once (even under nopreempt).
The node is healthy when

  - the API answers 200 on its health endpoint within the timeout, and
  - keepalived's checker process (health checks, IPVS) is alive, when the configuration has
    virtual servers (keepalived runs no checker process without them).

A sick node steps down only when the peer can do better: when the same health endpoint answers
on the peer (`--peer`, the VRRP unicast peer; same scheme, port and path). When both control
planes are down, the VIPs stay where they are: the data plane does not need the API, and FAULT
on both nodes would drop the VIPs everywhere.

keepalived drops what the script prints, so a verdict that differs from the last one (kept in
`--verdict-file`) also goes to the journal through syslog's socket (`--log-socket`, /dev/log):
"sick, stepping down: ...", "sick, but staying: ...", or "healthy again", once each time it
changes rather than every interval. The verdict file (0644) also tells whoever reads it what the
check found last.

keepalived runs it as root (keepalived 2.2.7's config test kills itself checking a script that
runs as another user, acassen/keepalived#2617), so it reads the pid file and opens the verdict
file, then drops to nobody before touching the network. Deliberately tiny: standard library
sockets, no HTTP client library; keepalived starts it every interval, and Python's start-up is
most of its cost.

    fulcrum-node-health --url http://127.0.0.1:8080/api/v1/health [--timeout 1]
                        [--checker-pidfile /run/fulcrum/keepalived-checkers.pid] [--peer 192.0.2.2]
                        [--verdict-file /run/fulcrum/node-health.verdict] [--log-socket /dev/log]

Exit status: 0 healthy (or sick with no healthy peer to hand over to), 1 step down, 2 bad usage.
"""

from __future__ import annotations

import os
import socket
import sys

NOBODY = 65534
USAGE = (
    "usage: fulcrum-node-health --url URL [--timeout SECONDS] [--checker-pidfile PATH] [--peer ADDRESS] "
    "[--verdict-file PATH] [--log-socket PATH]"
)
HEALTHY = "healthy"
MAX_VERDICT = 1024  # characters kept and logged of a verdict
LOG_SOCKET = "/dev/log"
# syslog's facility daemon (3) times 8 plus the severity: warning (4) when sick, notice (5) when well.
PRIORITY_SICK, PRIORITY_WELL = 3 * 8 + 4, 3 * 8 + 5


def main(argv: list[str] | None = None) -> int:
    try:
        options = _parse(sys.argv[1:] if argv is None else argv)
        scheme, host, port, path = _split_url(options["--url"])
        timeout = float(options.get("--timeout", "1"))
    except (KeyError, ValueError) as error:
        print(f"fulcrum-node-health: {error}\n{USAGE}", file=sys.stderr)
        return 2
    problems = []
    pidfile = options.get("--checker-pidfile")
    if pidfile and not _keepalived_alive(pidfile):
        problems.append(f"keepalived's checker process ({pidfile}) is not running")
    verdict_file = _open_verdict_file(options.get("--verdict-file"))
    _drop_privileges(scheme)
    status, verdict = _judge(options, problems, scheme, host, port, path, timeout)
    if verdict != HEALTHY:
        print(verdict, file=sys.stderr)
    if verdict_file is not None:
        _tell_a_change(verdict_file, verdict, options.get("--log-socket", LOG_SOCKET))
    return status


def _judge(
    options: dict[str, str], problems: list[str], scheme: str, host: str, port: int, path: str, timeout: float
) -> tuple[int, str]:
    """The exit status and the verdict in words."""
    local = _probe(scheme, host, port, path, timeout)
    if local:
        problems.append(f"API {options['--url']}: {local}")
    if not problems:
        return 0, HEALTHY
    peer = options.get("--peer")
    if peer is None:
        return 1, "sick, stepping down: " + "; ".join(problems)
    peer_problem = _probe(scheme, peer.strip("[]"), port, path, timeout)
    if peer_problem:
        return 0, f"sick, but staying: the peer cannot take over ({peer_problem}): " + "; ".join(problems)
    return 1, "sick, stepping down: " + "; ".join(problems)


def _open_verdict_file(path: str | None) -> int | None:
    """Opened while still root (keepalived's run directory is root's); None when not asked for."""
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        os.fchmod(fd, 0o644)  # whatever keepalived's umask: the API reads it
        return fd
    except OSError as error:
        print(f"fulcrum-node-health: the verdict file {path}: {error}", file=sys.stderr)
        return None


def _tell_a_change(fd: int, verdict: str, log_socket: str) -> None:
    """Keep `verdict` in the file and send it to the journal, when it is not what the file held."""
    verdict = verdict[:MAX_VERDICT]
    try:
        before = os.pread(fd, 4 * MAX_VERDICT, 0).decode("utf-8", "replace").strip()
        if before != verdict:
            os.ftruncate(fd, 0)
            os.pwrite(fd, verdict.encode() + b"\n", 0)
    except OSError as error:
        print(f"fulcrum-node-health: the verdict file: {error}", file=sys.stderr)
        return
    finally:
        os.close(fd)
    if (before or HEALTHY) == verdict:  # no news (a first verdict of healthy is none either)
        return
    sick = verdict != HEALTHY
    words = verdict if sick else "healthy again"
    message = f"<{PRIORITY_SICK if sick else PRIORITY_WELL}>fulcrum-node-health[{os.getpid()}]: {words}"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as journal:
            journal.sendto(message.encode(), log_socket)
    except OSError as error:  # no journal listening: the verdict file still has it
        print(f"fulcrum-node-health: {log_socket}: {error}", file=sys.stderr)


def _parse(args: list[str]) -> dict[str, str]:
    known = {"--url", "--timeout", "--checker-pidfile", "--peer", "--verdict-file", "--log-socket"}
    if len(args) % 2:
        raise ValueError(f"expected option-value pairs, got {args!r}")
    options = dict(zip(args[::2], args[1::2], strict=True))
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown option {sorted(unknown)[0]}")
    if "--url" not in options:
        raise KeyError("--url is required")
    return options


def _split_url(url: str) -> tuple[str, str, int, str]:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise ValueError(f"{url!r} is not an http or https URL")
    authority, slash, path = rest.partition("/")
    if authority.startswith("["):
        host, _, port_text = authority[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    port = int(port_text) if port_text else (443 if scheme == "https" else 80)
    return scheme, host, port, "/" + path if slash else "/"


def _keepalived_alive(pidfile: str) -> bool:
    try:
        with open(pidfile) as handle:
            pid = int(handle.read().split()[0])
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip() == "keepalived"
    except (OSError, ValueError, IndexError):
        return False


def _drop_privileges(scheme: str) -> None:
    if os.getuid() == 0:
        # Modules the probe loads lazily, loaded while the interpreter's files are still readable
        # (a Python under a root-only prefix would fail to find them as nobody).
        import encodings.idna  # noqa: F401  (getaddrinfo encodes host names with it)

        if scheme == "https":
            import ssl  # noqa: F401
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def _probe(scheme: str, host: str, port: int, path: str, timeout: float) -> str | None:
    """None when GET path answers 200 within `timeout` seconds, else what went wrong."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            sock = raw
            if scheme == "https":
                import ssl  # only when needed: importing it is a noticeable part of the run

                # Liveness only: the appliance's certificate is self-signed, and nothing secret is sent.
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                sock = context.wrap_socket(raw, server_hostname=host)
            authority = f"[{host}]" if ":" in host else host
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
            head = b""
            while b"\r\n" not in head and len(head) < 1024:
                chunk = sock.recv(1024)
                if not chunk:
                    break
                head += chunk
    except OSError as error:
        return f"{type(error).__name__}: {error}"
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status.split()
    if len(parts) >= 2 and parts[1] == "200":
        return None
    return f"answered {status!r}" if status else "closed the connection without answering"


if __name__ == "__main__":
    sys.exit(main())
