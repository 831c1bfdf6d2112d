"""fulcrum-applyd end to end over a real Unix socket: in a thread, and as the installed command."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from fulcrum.apply.capture import CaptureSpec
from fulcrum.apply.client import ApplierError, LocalApplier, SocketApplier
from fulcrum.apply.daemon import MAX_REQUEST_BYTES, ApplyServer
from fulcrum.apply.engine import ApplyEngine
from fulcrum.apply.result import ApplyOutcome, ApplyResult, BgpView, DataplaneStats, DataplaneStatus

from applytest import IPVS_PRESENT, Paths, make_snapshot
from lab.wait import wait_until


def _exchange(path: Path, payload: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(30)
        connection.connect(str(path))
        connection.sendall(payload)
        connection.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    assert reply.endswith(b"\n")
    return json.loads(reply)


def _refusal(server: ApplyServer, payload: bytes) -> str:
    answer = _exchange(server.path, payload)
    assert answer["ok"] is False, answer
    return answer["error"]


def _request(op: str, **fields: Any) -> bytes:
    return json.dumps({"op": op, **fields}).encode() + b"\n"


def test_status_over_the_socket(server: ApplyServer) -> None:
    status = SocketApplier(server.path).status()
    assert isinstance(status, DataplaneStatus)
    assert status.ipvs_available == IPVS_PRESENT
    assert status.keepalived_version


def test_reads_are_logged_at_debug_level_and_validations_and_refusals_at_info(
    server: ApplyServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The API asks for stats and status every second or two: a journal line each would bury the
    applies and refusals an admin reads the journal for."""
    applier = SocketApplier(server.path)
    with caplog.at_level("DEBUG", logger="fulcrum.applyd"):
        applier.stats()
        applier.status()
        applier.validate(make_snapshot(), 5)
        _refusal(server, _request("banana"))
    lines = [(r.levelname, r.getMessage().split(": ", 1)[1]) for r in caplog.records if "uid" in r.getMessage()]
    assert [level for level, _ in lines] == ["DEBUG", "DEBUG", "INFO", "INFO"], lines
    assert lines[0][1] == "answered stats" and lines[1][1] == "answered status", lines
    assert lines[2][1].startswith("revision 5: validated"), lines
    assert lines[3][1].startswith("refused the request: "), lines


def test_validate_over_the_socket(server: ApplyServer) -> None:
    result = SocketApplier(server.path).validate(make_snapshot(), 3)
    assert isinstance(result, ApplyResult)
    assert result.outcome == ApplyOutcome.VALIDATED, result.message
    assert result.revision == 3


@pytest.mark.skipif(IPVS_PRESENT, reason="asserts behaviour on a kernel without IPVS")
def test_apply_over_the_socket_without_ipvs(server: ApplyServer) -> None:
    result = SocketApplier(server.path).apply(make_snapshot(), 4)
    assert result.outcome == ApplyOutcome.VALIDATED
    assert result.message.startswith("data plane unavailable: this kernel has no IPVS")


def test_stats_over_the_socket(server: ApplyServer) -> None:
    stats = SocketApplier(server.path).stats()
    assert isinstance(stats, DataplaneStats)
    assert stats.ipvs_available == IPVS_PRESENT


def test_the_vrrp_view_over_the_socket(server: ApplyServer) -> None:
    """The interfaces of this namespace as `ip` lists them, and no keepalived running."""
    view = SocketApplier(server.path).vrrp_view()
    assert view.ipvs_available == IPVS_PRESENT and view.vrrp_running is False
    listed = json.loads(subprocess.run(["ip", "-j", "address", "show"], capture_output=True, text=True, check=True).stdout)
    expected = {link["ifname"]: sorted(a["local"] for a in link["addr_info"]) for link in listed}
    assert {i.name: sorted(i.addresses) for i in view.interfaces} == expected
    loopback = next(i for i in view.interfaces if i.name == "lo")
    assert loopback.up and "127.0.0.1" in loopback.addresses


def test_local_and_socket_appliers_return_the_same_models(server: ApplyServer, engine: ApplyEngine) -> None:
    local, remote = LocalApplier(engine), SocketApplier(server.path)
    snapshot = make_snapshot()
    for through_socket, in_process in (
        (remote.status(), local.status()),
        (remote.validate(snapshot, 5), local.validate(snapshot, 5)),
        (remote.stats(), local.stats()),
        (remote.vrrp_view(), local.vrrp_view()),
        (remote.bgp_view(), local.bgp_view()),
    ):
        assert type(through_socket) is type(in_process)
    assert remote.status().model_dump() == local.status().model_dump()
    assert remote.bgp_view().model_dump() == local.bgp_view().model_dump() == BgpView(managed=False).model_dump()


def test_the_socket_is_group_accessible_only(server: ApplyServer) -> None:
    mode = server.path.stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o660


def test_malformed_json_is_refused(server: ApplyServer) -> None:
    assert _refusal(server, b'{"op": "status"\n').startswith("malformed request: not JSON:")


def test_a_request_that_is_not_an_object_is_refused(server: ApplyServer) -> None:
    assert _refusal(server, b'["status"]\n') == "malformed request: expected a JSON object"


def test_an_unknown_op_is_refused(server: ApplyServer) -> None:
    assert _refusal(server, _request("exec", command="reboot")) == (
        "unknown op 'exec': expected one of apply, validate, status, stats, vrrp_view, bgp_view, capture, reboot, "
        "ssh_host_keys, install_ssh_host_keys"
    )


def test_a_reboot_takes_no_command_and_needs_one_configured(server: ApplyServer) -> None:
    """The restart runs the helper's own configured command; a request cannot name one."""
    assert _refusal(server, _request("reboot", command="rm -rf /")).startswith("invalid reboot request: ")
    assert _refusal(server, _request("reboot")) == (
        "this node does not restart itself: no reboot command is configured"
    )


def test_a_capture_over_the_socket_returns_a_pcap(server: ApplyServer) -> None:
    done = threading.Event()

    def ping() -> None:  # until the capture has its packets, whenever tcpdump started listening
        while not done.is_set():
            subprocess.run(["ping", "-n", "-c", "1", "127.0.0.1"], capture_output=True, check=False)
            done.wait(0.2)

    pinger = threading.Thread(target=ping)
    pinger.start()
    try:
        result = SocketApplier(server.path).capture(CaptureSpec(interface="lo", count=2, seconds=20, filter="icmp"))
    finally:
        done.set()
        pinger.join()
    pcap = base64.b64decode(result.pcap_base64)
    assert pcap[:4] == bytes.fromhex("d4c3b2a1") and result.packets == 2 and result.stopped_by == "count"


def test_a_filter_tcpdump_rejects_is_refused_naming_the_filter(server: ApplyServer) -> None:
    with pytest.raises(ApplierError, match="banana") as refused:
        SocketApplier(server.path).capture(CaptureSpec(interface="lo", seconds=5, filter="port banana"))
    assert refused.value.field == "filter"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"interface": "-i"}, "interface: Value error, not an interface name"),
        ({"interface": "nosuch0"}, "interface: Value error, no interface 'nosuch0'"),
        ({"interface": "lo", "filter": "icmp; reboot"}, "filter: Value error, use a BPF filter"),
        ({"interface": "lo", "filter": "-w /etc/passwd"}, "filter: Value error, a capture filter must not start"),
        ({"interface": "lo", "count": 5000}, "count: Input should be less than or equal to 1000"),
        ({"interface": "lo", "seconds": "10"}, "seconds: Input should be a valid integer"),
        ({"interface": "lo", "argv": ["tcpdump", "-w", "/etc/passwd"]}, "argv: Extra inputs are not permitted"),
    ],
)
def test_the_helper_validates_a_capture_itself(server: ApplyServer, fields: dict[str, Any], problem: str) -> None:
    """The API validated these already; the helper (root) does not trust it to have."""
    assert _refusal(server, _request("capture", **fields)).startswith(f"invalid capture request: {problem}")


def test_a_request_without_a_newline_is_refused(server: ApplyServer) -> None:
    assert _refusal(server, b'{"op": "status"}') == "malformed request: it must end with a newline"


def test_an_oversize_request_is_refused(server: ApplyServer) -> None:
    error = _refusal(server, b'{"op": "status", "pad": "' + b"x" * MAX_REQUEST_BYTES + b'"}\n')
    assert error == f"request too large: over {MAX_REQUEST_BYTES} bytes"


def test_a_snapshot_that_fails_validation_is_refused_with_the_reason(server: ApplyServer) -> None:
    snapshot = make_snapshot().model_dump(mode="json")
    snapshot["services"][0]["ports"] = [80, 80]
    error = _refusal(server, _request("apply", revision=3, snapshot=snapshot))
    assert error.startswith("invalid apply request: snapshot.services.0: Value error, ")
    assert "lists a port twice" in error  # the snapshot model's own words


def test_the_interface_takes_a_snapshot_and_nothing_else(server: ApplyServer) -> None:
    snapshot = make_snapshot().model_dump(mode="json")
    error = _refusal(server, _request("apply", revision=3, snapshot=snapshot, path="/etc/shadow"))
    assert error == "invalid apply request: path: Extra inputs are not permitted"
    snapshot["services"][0]["script"] = "/bin/sh"
    error = _refusal(server, _request("validate", revision=3, snapshot=snapshot))
    assert error == "invalid validate request: snapshot.services.0.script: Extra inputs are not permitted"


def test_validation_is_strict(server: ApplyServer) -> None:
    snapshot = make_snapshot().model_dump(mode="json")
    assert _refusal(server, _request("apply", revision="3", snapshot=snapshot)) == (
        "invalid apply request: revision: Input should be a valid integer"
    )
    snapshot["services"][0]["ports"] = ["80"]
    error = _refusal(server, _request("validate", revision=3, snapshot=snapshot))
    assert error == "invalid validate request: snapshot.services.0.ports.0: Input should be a valid integer"


def test_a_dead_helper_gives_a_clear_error(socket_dir: Path) -> None:
    path = socket_dir / "nobody.sock"
    with pytest.raises(ApplierError, match=rf"^apply helper not reachable at {path}: No such file or directory$"):
        SocketApplier(path).status()


def test_a_stale_socket_is_replaced_but_a_live_one_is_not(engine: ApplyEngine, socket_dir: Path) -> None:
    path = socket_dir / "applyd.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens: a helper that died
    first = ApplyServer(path, engine)
    try:
        with pytest.raises(RuntimeError, match="another fulcrum-applyd is already listening"):
            ApplyServer(path, engine)
    finally:
        first.server_close()
    assert not path.exists()


def test_a_file_in_the_way_is_not_replaced(engine: ApplyEngine, socket_dir: Path) -> None:
    path = socket_dir / "applyd.sock"
    path.write_text("precious")
    with pytest.raises(RuntimeError, match="exists and is not a socket"):
        ApplyServer(path, engine)
    assert path.read_text() == "precious"


def test_the_installed_command_serves_and_stops_on_sigterm(paths: Paths, socket_dir: Path) -> None:
    path = socket_dir / "applyd.sock"
    environment = {
        **os.environ,
        "FULCRUM_STATE_DIR": str(paths.state),
        "FULCRUM_KEEPALIVED_CONF": str(paths.conf),
        "FULCRUM_NFTABLES_CONF": str(paths.nft),
        "FULCRUM_KEEPALIVED_PIDFILE": str(paths.pidfile),
    }
    command = Path(sys.executable).with_name("fulcrum-applyd")
    daemon = subprocess.Popen(
        [str(command), "--socket", str(path), "--socket-mode", "0600"],
        env=environment,
        cwd=paths.root,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(path.exists, 20, what=f"applyd's socket {path}")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        applier = SocketApplier(path)
        assert applier.status().applied_revision is None
        # No VIP groups: the host namespace's interfaces do not matter to keepalived -t.
        result = applier.validate(make_snapshot(vip_groups=[]), 11)
        assert result.outcome == ApplyOutcome.VALIDATED, result.message
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=20) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    log = daemon.stderr.read() if daemon.stderr else ""
    assert f"listening on {path}" in log
    assert "revision 11: validated" in log
    assert not path.exists()


def test_host_keys_may_only_be_sshds_own_files(server: ApplyServer) -> None:
    refusal = _refusal(server, _request("install_ssh_host_keys", files={"../../root/.ssh/authorized_keys": "ssh-ed25519 A"}))
    assert refusal.startswith("invalid install_ssh_host_keys request: files.../../root/.ssh/authorized_keys"), refusal
    refusal = _refusal(server, _request("install_ssh_host_keys", files={}, path="/etc"))
    assert "path: Extra inputs are not permitted" in refusal, refusal
