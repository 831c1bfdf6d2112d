"""How the API asks for an apply: in-process (privileged callers, tests) or via fulcrum-applyd."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fulcrum.apply.capture import CaptureResult, CaptureSpec, run_capture
from fulcrum.apply.host_keys import HostKeys, HostKeysInstalled, HostKeysRefused
from fulcrum.apply.result import (
    ApplyResult,
    BgpView,
    DataplaneStats,
    DataplaneStatus,
    RebootRefused,
    RebootResult,
    VrrpView,
)
from fulcrum.config.snapshot import ConfigSnapshot

if TYPE_CHECKING:
    from fulcrum.apply.engine import ApplyEngine

# An apply may start keepalived and wait for IPVS to match; well above the engine's own deadlines.
DEFAULT_TIMEOUT = 120.0
# The VRRP view is read for every HA status answer: a helper that does not answer soon leaves the
# status with keepalived's notifications alone rather than holding the request.
VIEW_TIMEOUT = 5.0
# The BGP page's view asks vtysh three times (bgpd's prefixes and neighbors, bfdd's peers), each a
# process start: 5 s was not enough for an appliance under emulation (the image test). Only the
# BGP page waits for it, and it polls one answer at a time.
BGP_VIEW_TIMEOUT = 30.0
CAPTURE_GRACE = 15.0


class ApplierError(RuntimeError):
    """The apply helper could not be reached, did not answer, or refused the request."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field  # the request's argument the helper refused, when it named one


class Applier(Protocol):
    def apply(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult: ...

    def validate(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult: ...

    def status(self) -> DataplaneStatus: ...

    def stats(self) -> DataplaneStats: ...

    def vrrp_view(self) -> VrrpView: ...

    def bgp_view(self) -> BgpView: ...

    def capture(self, spec: CaptureSpec) -> CaptureResult: ...

    def reboot(self) -> RebootResult: ...

    def ssh_host_keys(self) -> HostKeys: ...

    def install_ssh_host_keys(self, keys: HostKeys) -> HostKeysInstalled: ...


class LocalApplier:
    """Runs the engine in this process, which must itself be privileged."""

    def __init__(self, engine: ApplyEngine) -> None:
        self.engine = engine

    def apply(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        return self.engine.apply(snapshot, revision)

    def validate(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        return self.engine.validate(snapshot, revision)

    def status(self) -> DataplaneStatus:
        return self.engine.status()

    def stats(self) -> DataplaneStats:
        return self.engine.stats()

    def vrrp_view(self) -> VrrpView:
        return self.engine.vrrp_view()

    def bgp_view(self) -> BgpView:
        return self.engine.bgp_view()

    def capture(self, spec: CaptureSpec) -> CaptureResult:
        return run_capture(spec)

    def reboot(self) -> RebootResult:
        try:
            return self.engine.reboot()
        except RebootRefused as error:
            raise ApplierError(str(error)) from error

    def ssh_host_keys(self) -> HostKeys:
        try:
            return self.engine.ssh_host_keys()
        except (OSError, ValueError) as error:  # as the helper answers: refused, not a crash
            raise ApplierError(f"the SSH host keys cannot be read: {error}") from error

    def install_ssh_host_keys(self, keys: HostKeys) -> HostKeysInstalled:
        try:
            return self.engine.install_ssh_host_keys(keys)
        except HostKeysRefused as error:
            raise ApplierError(str(error)) from error
        except OSError as error:
            raise ApplierError(f"the SSH host keys cannot be written: {error}") from error


class SocketApplier:
    """Talks to fulcrum-applyd over its Unix socket: one connection per request."""

    def __init__(self, path: str | Path, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = Path(path)
        self.timeout = timeout

    def apply(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        return ApplyResult.model_validate(self._change("apply", snapshot, revision))

    def validate(self, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
        return ApplyResult.model_validate(self._change("validate", snapshot, revision))

    def status(self) -> DataplaneStatus:
        return DataplaneStatus.model_validate(self._call({"op": "status"}))

    def stats(self) -> DataplaneStats:
        return DataplaneStats.model_validate(self._call({"op": "stats"}))

    def vrrp_view(self) -> VrrpView:
        return VrrpView.model_validate(self._call({"op": "vrrp_view"}, min(self.timeout, VIEW_TIMEOUT)))

    def bgp_view(self) -> BgpView:
        return BgpView.model_validate(self._call({"op": "bgp_view"}, min(self.timeout, BGP_VIEW_TIMEOUT)))

    def capture(self, spec: CaptureSpec) -> CaptureResult:
        # The capture runs for up to spec.seconds, then tcpdump gets a few seconds to stop.
        request = {"op": "capture", **spec.model_dump(mode="json")}
        return CaptureResult.model_validate(self._call(request, spec.seconds + CAPTURE_GRACE))

    def reboot(self) -> RebootResult:
        return RebootResult.model_validate(self._call({"op": "reboot"}))

    def ssh_host_keys(self) -> HostKeys:
        return HostKeys.model_validate(self._call({"op": "ssh_host_keys"}))

    def install_ssh_host_keys(self, keys: HostKeys) -> HostKeysInstalled:
        request = {"op": "install_ssh_host_keys", **keys.model_dump(mode="json")}
        return HostKeysInstalled.model_validate(self._call(request))

    def _change(self, op: str, snapshot: ConfigSnapshot, revision: int) -> Any:
        return self._call({"op": op, "revision": revision, "snapshot": snapshot.model_dump(mode="json")})

    def _call(self, request: dict[str, Any], timeout: float | None = None) -> Any:
        timeout = self.timeout if timeout is None else timeout
        payload = json.dumps(request, separators=(",", ":")).encode() + b"\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout)
            try:
                connection.connect(str(self.path))
            except OSError as error:
                raise ApplierError(
                    f"apply helper not reachable at {self.path}: {error.strerror or error}"
                ) from error
            try:
                connection.sendall(payload)
                connection.shutdown(socket.SHUT_WR)
                reply = _read_to_end(connection)
            except TimeoutError as error:
                raise ApplierError(
                    f"apply helper at {self.path} did not answer {request['op']} within {timeout:g} s"
                ) from error
            except OSError as error:
                raise ApplierError(f"apply helper at {self.path} dropped the connection: {error}") from error
        try:
            answer = json.loads(reply)
        except ValueError as error:
            raise ApplierError(
                f"apply helper at {self.path} sent no valid answer: {reply[:200]!r}"
            ) from error
        if not answer.get("ok"):
            refusal = f"apply helper refused the {request['op']} request: {answer.get('error')}"
            raise ApplierError(refusal, answer.get("field"))
        return answer["result"]


def _read_to_end(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)
