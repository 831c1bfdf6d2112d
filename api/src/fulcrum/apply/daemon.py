"""fulcrum-applyd: the privileged helper that puts validated configurations live.

The API runs unprivileged and asks this helper, over a Unix socket, to apply or validate a
configuration. The interface is deliberately narrow: a request carries a revision number and a
`ConfigSnapshot`, which is validated again here, strictly, with the same models; it can never
carry a file, a path or a command.

Protocol: one request per connection, one JSON object terminated by a newline:

    {"op": "apply" | "validate", "revision": 12, "snapshot": {...}}
    {"op": "status" | "stats" | "vrrp_view" | "bgp_view"}
    {"op": "reboot"}    (the configured reboot command: the request names none)
    {"op": "capture", "interface": "eth0", "count": 100, "seconds": 10, "filter": "tcp port 80"}
    {"op": "ssh_host_keys"}
    {"op": "install_ssh_host_keys", "files": {"ssh_host_ed25519_key": "...", ...}}

and one JSON line back: {"ok": true, "result": {...}} with an ApplyResult, DataplaneStatus,
DataplaneStats, CaptureResult (a bounded tcpdump, see fulcrum.apply.capture), HostKeys or
HostKeysInstalled (fulcrum.apply.host_keys: a backup's SSH host keys), or
{"ok": false, "error": "..."} when the request was refused.

Daemon options come from the command line (or FULCRUM_APPLYD_* variables); the engine's paths
come from the appliance settings (FULCRUM_* variables, see fulcrum.settings), like the API's.
"""

from __future__ import annotations

import argparse
import errno
import grp
import json
import logging
import os
import signal
import socket
import socketserver
import stat
import struct
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from fulcrum.apply.capture import CaptureFailed, CaptureFilterRejected, CaptureSpec, run_capture
from fulcrum.apply.engine import ApplyEngine
from fulcrum.apply.engine_settings import engine_config
from fulcrum.apply.host_keys import HostKeys, HostKeysRefused
from fulcrum.apply.result import RebootRefused
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.settings import Settings

log = logging.getLogger("fulcrum.applyd")

MAX_REQUEST_BYTES = 16 * 1024 * 1024  # one request line, newline included
REQUEST_TIMEOUT = 30.0  # for a client to send its request; the apply itself may take longer
OPS = (
    "apply",
    "validate",
    "status",
    "stats",
    "vrrp_view",
    "bgp_view",
    "capture",
    "reboot",
    "ssh_host_keys",
    "install_ssh_host_keys",
)
MAX_QUOTED_ERRORS = 10


class ChangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: Literal["apply", "validate"]
    revision: Annotated[int, Field(ge=0)]
    snapshot: ConfigSnapshot


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: Literal["status", "stats", "vrrp_view", "bgp_view", "reboot", "ssh_host_keys"]


class CaptureRequest(CaptureSpec):
    op: Literal["capture"]


class InstallHostKeysRequest(HostKeys):
    model_config = ConfigDict(extra="forbid")

    op: Literal["install_ssh_host_keys"]


_Request = ChangeRequest | QueryRequest | CaptureRequest | InstallHostKeysRequest
_REQUEST = TypeAdapter(Annotated[_Request, Field(discriminator="op")])


class RequestError(ValueError):
    """A request refused before reaching the engine; the message goes back to the client."""


def parse_request(line: bytes) -> _Request:
    try:
        document = json.loads(line)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        raise RequestError(f"malformed request: not JSON: {error}") from error
    if not isinstance(document, dict):
        raise RequestError("malformed request: expected a JSON object")
    op = document.get("op")
    if op not in OPS:
        raise RequestError(f"unknown op {op!r}: expected one of {', '.join(OPS)}")
    try:
        # Strict: no coercion (a string is not a number, 1.5 is not a revision); JSON mode still
        # reads addresses and enum values from their JSON strings.
        return _REQUEST.validate_json(line, strict=True)
    except ValidationError as error:
        raise RequestError(f"invalid {op} request: {_summarise(error)}") from error


def _summarise(error: ValidationError) -> str:
    problems = []
    for item in error.errors()[:MAX_QUOTED_ERRORS]:
        location = ".".join(str(part) for part in item["loc"][1:])  # [0] is the op tag
        problems.append(f"{location}: {item['msg']}" if location else item["msg"])
    more = error.error_count() - len(problems)
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def handle(engine: ApplyEngine, line: bytes) -> tuple[str | None, dict[str, Any]]:
    """Answer one request line (without the transport); never raises. With the answer, the
    request's op (None when the line is not a request), for the journal's line."""
    try:
        request = parse_request(line)
    except RequestError as error:
        return None, {"ok": False, "error": str(error)}
    return request.op, _answer(engine, request)


def _answer(engine: ApplyEngine, request: _Request) -> dict[str, Any]:
    try:
        if isinstance(request, CaptureRequest):
            result: BaseModel = run_capture(CaptureSpec.model_validate(request.model_dump(exclude={"op"})))
        elif isinstance(request, ChangeRequest):
            run = engine.apply if request.op == "apply" else engine.validate
            result = run(request.snapshot, request.revision)
        elif isinstance(request, InstallHostKeysRequest):
            result = engine.install_ssh_host_keys(HostKeys(files=request.files))
        elif request.op == "status":
            result = engine.status()
        elif request.op == "vrrp_view":
            result = engine.vrrp_view()
        elif request.op == "bgp_view":
            result = engine.bgp_view()
        elif request.op == "reboot":
            result = engine.reboot()
        elif request.op == "ssh_host_keys":
            result = engine.ssh_host_keys()
        else:
            result = engine.stats()
    except CaptureFilterRejected as error:
        return {"ok": False, "error": str(error), "field": "filter"}
    except (CaptureFailed, RebootRefused, HostKeysRefused) as error:
        return {"ok": False, "error": str(error)}
    except Exception as error:  # the client gets an answer even when the engine has a bug
        log.exception("%s failed", request.op)
        return {
            "ok": False,
            "error": f"{request.op} failed inside the apply helper: {type(error).__name__}: {error}",
        }
    return {"ok": True, "result": result.model_dump(mode="json")}


class _Handler(socketserver.StreamRequestHandler):
    server: ApplyServer

    def handle(self) -> None:
        self.connection.settimeout(REQUEST_TIMEOUT)
        peer = _peer(self.connection)
        op, answer = self._serve()
        level, line = _log_line(op, answer)
        log.log(level, "%s: %s", peer, line)
        try:
            self.wfile.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            self.wfile.flush()
        except OSError as error:
            log.warning("%s: could not send the answer: %s", peer, error)

    def _serve(self) -> tuple[str | None, dict[str, Any]]:
        try:
            line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
        except TimeoutError:
            return None, {"ok": False, "error": f"no request received within {REQUEST_TIMEOUT:g} s"}
        if len(line) > MAX_REQUEST_BYTES:
            self._drain()
            return None, {"ok": False, "error": f"request too large: over {MAX_REQUEST_BYTES} bytes"}
        if not line.endswith(b"\n"):
            return None, {"ok": False, "error": "malformed request: it must end with a newline"}
        self.connection.settimeout(None)  # an apply may legitimately take a while
        return handle(self.server.engine, line)

    def _drain(self) -> None:
        """Read (a bounded amount of) the rest of an oversize request before answering: closing
        a Unix socket with unread data resets it, and the client would never see the answer."""
        left = MAX_REQUEST_BYTES
        try:
            while left > 0 and (chunk := self.rfile.read1(min(left, 1 << 20))):
                left -= len(chunk)
        except OSError:
            pass


def _peer(connection: socket.socket) -> str:
    pid, uid, _gid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return f"pid {pid} uid {uid}"


# Asked every second or two by the API (its telemetry, the HA watcher, the pages open): at debug
# level, so that a line each does not bury the applies, refusals and privileged acts in the journal.
READS = frozenset({"status", "stats", "vrrp_view", "bgp_view", "ssh_host_keys"})


def _log_line(op: str | None, answer: dict[str, Any]) -> tuple[int, str]:
    """The journal's level and line for one answer."""
    if not answer["ok"]:
        return logging.INFO, f"refused {op or 'the request'}: {answer['error']}"
    result = answer["result"]
    if "pcap_base64" in result:
        return logging.INFO, f"capture: {result['packets']} packets, stopped by {result['stopped_by']}"
    if "outcome" in result:
        return logging.INFO, f"revision {result['revision']}: {result['outcome']}: {result['message']}"
    return (logging.DEBUG if op in READS else logging.INFO), f"answered {op}"


class ApplyServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Status and stats are answered while an apply runs; applies queue on the engine's lock."""

    # On shutdown, wait for requests in flight: an apply finishes (or rolls back) rather than
    # stopping halfway through.
    daemon_threads = False
    block_on_close = True

    def __init__(self, path: Path, engine: ApplyEngine, mode: int = 0o660, group: int | None = None) -> None:
        self.engine = engine
        self.path = path
        _remove_stale_socket(path)
        previous = os.umask(0o177)  # never, even briefly, more open than 0600 before the chmod
        try:
            super().__init__(str(path), _Handler)
        finally:
            os.umask(previous)
        os.chmod(path, mode)
        if group is not None:
            os.chown(path, -1, group)

    def server_close(self) -> None:
        super().server_close()
        self.path.unlink(missing_ok=True)


def _remove_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise RuntimeError(f"{path} exists and is not a socket; refusing to replace it")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError as error:
            if error.errno != errno.ECONNREFUSED:
                raise
        else:
            raise RuntimeError(f"another fulcrum-applyd is already listening on {path}")
    path.unlink()


def _group_id(value: str) -> int:
    try:
        return int(value) if value.isdigit() else grp.getgrnam(value).gr_gid
    except KeyError as error:
        raise argparse.ArgumentTypeError(f"no such group: {value}") from error


def _parse_args(argv: list[str] | None, settings: Settings) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(
        prog="fulcrum-applyd",
        description="Privileged helper that applies validated Fulcrum configurations (keepalived, nftables).",
        epilog="Engine paths come from the appliance settings: FULCRUM_STATE_DIR, FULCRUM_KEEPALIVED_CONF, "
        "FULCRUM_NFTABLES_CONF, FULCRUM_KEEPALIVED_PIDFILE, FULCRUM_KEEPALIVED_START (a JSON list), "
        "FULCRUM_KEEPALIVED_CHECKERS_PIDFILE, FULCRUM_NOTIFY_FIFO, FULCRUM_LVS_NOTIFY_FIFO, "
        "FULCRUM_MAINTENANCE_FILE, FULCRUM_NODE_HEALTH_* and FULCRUM_READBACK_TIMEOUT.",
    )
    parser.add_argument(
        "--socket",
        type=Path,
        default=settings.apply_socket,
        help="default: FULCRUM_APPLY_SOCKET or %(default)s",
    )
    parser.add_argument(
        "--socket-group",
        type=_group_id,
        default=env.get("FULCRUM_APPLYD_GROUP"),
        help="group (name or gid) allowed to connect, normally the API's (default: FULCRUM_APPLYD_GROUP)",
    )
    parser.add_argument(
        "--socket-mode",
        type=lambda value: int(value, 8),
        default=env.get("FULCRUM_APPLYD_SOCKET_MODE", "0660"),
        help="octal permissions of the socket file (default 0660)",
    )
    parser.add_argument("--log-level", default=env.get("FULCRUM_APPLYD_LOG_LEVEL", "INFO"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    settings = Settings()
    args = _parse_args(argv, settings)
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    engine = ApplyEngine(engine_config(settings))
    try:
        server = ApplyServer(args.socket, engine, args.socket_mode, args.socket_group)
    except (OSError, RuntimeError) as error:
        log.error("cannot listen on %s: %s", args.socket, error)
        return 1

    def stop(signum: int, _frame: object) -> None:
        log.info("%s: shutting down", signal.Signals(signum).name)
        # shutdown() waits for serve_forever() to return, which runs in this very thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("listening on %s (mode %o)", args.socket, args.socket_mode)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
