"""End to end on the appliance image, under software emulation: first boot on a read-only root,
first-run setup, a service committed to the kernel's IPVS, the console menu (static address,
password reset), the appliance's own network taken over through the API (a bond of two NICs, a
VLAN on it, a static route), an A/B upgrade whose API cannot start (a signed bundle cut from this
image with a test-only fault, uploaded and installed into slot B through the API) rolled back by
itself to slot A, with configuration, certificate, network, machine ID and journal kept across
those restarts, a management address move that nobody confirms rolling back by itself, console
password protection turned on through the API, a factory reset back to first-run state (an open
console and DHCP again, the slots' boot status untouched), and there a first-run restore of a
backup taken before the upgrade (a wrong passphrase refused first) that brings back the accounts,
the certificate, the SSH host keys, the network and the service; after every boot, no unit has
failed. A good upgrade to a new version, of both nodes of a pair, is test_image_pair.py's.

Four boots under TCG with BIOS firmware (test_image_pair.py boots one node with UEFI), plus
`make vm-image` when its inputs changed (3 to 5 minutes with a warm download cache). Serial logs
and timings are kept in tests/image/results/.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from appliance import BOOT_TIMEOUT, EXTRA_NIC_MACS, Appliance
from lab.wait import wait_until
from upgrade_checks import (
    FAULTY_VERSION,
    MARKER,
    VERDICT_TIMEOUT,
    assert_upgrade_rolled_back,
    make_bundle,
    reboot_through_api,
    upload_and_install,
    wait_for_verdict,
)

pytestmark = pytest.mark.image

ADMIN = "admin"
FIRST_PASSWORD = "first-run passphrase 1"
CONSOLE_PASSWORD = "reset at the console 2"
CONSOLE_LOCK_PASSWORD = "locks the console 3"
VIP = "192.0.2.10"
# qemu's user network: the guest is 10.0.2.15, the host (and the test's TCP backend) 10.0.2.2.
GUEST, GATEWAY, DNS = "10.0.2.15", "10.0.2.2", "10.0.2.3"
SECOND_DNS, OFF_NETWORK_GATEWAY = "192.0.2.53", "192.0.2.1"
# Where the unconfirmed change moves the management address: qemu forwards the host's ports to
# GUEST only, so from there the API cannot be reached (the lock-out commit-confirmed undoes).
MOVED_GUEST = "10.0.2.16"
# The managed network's own part, on the two spare NICs (EXTRA_NIC_MACS): documentation prefixes.
BOND, VLAN, VLAN_ID = "bond0", "front", 100
VLAN_ADDRESS, VLAN_GATEWAY = "198.51.100.10/24", "198.51.100.1"
ROUTE_DESTINATION, ROUTE_TABLE = "203.0.113.0/24", 100
# What /data/network/timesyncd.conf has before the network is managed (data-layout.conf).
DEBIAN_NTP = [f"{n}.debian.pool.ntp.org" for n in range(4)]
UNCONFIRMED_SECONDS = 30
# This node's BGP: a session to a router that is not there (it stays Active), BFD on, nothing announced.
BGP_NEIGHBOR = "192.0.2.254"
BGP = {"asn": 65001, "router_id": "192.0.2.5", "neighbors": [{"address": BGP_NEIGHBOR, "remote_asn": 65000}], "announce": []}
BACKUP_PASSPHRASE = "kept apart from the box 4"
RESTORE_APPLY_TIMEOUT = 180


def test_appliance_lifecycle(appliance: Appliance, tcp_backend: int, tmp_path: Path) -> None:
    timings: dict[str, float] = {}
    # The faulty upgrade's bundle is cut and signed while the appliance boots (a minute of CPU).
    bundle_maker = ThreadPoolExecutor(max_workers=1)
    building_bundle = bundle_maker.submit(make_bundle, tmp_path, FAULTY_VERSION, True)
    bundle_maker.shutdown(wait=False)

    # First boot: the console shows the certificate the dashboard must present.
    first_fingerprint = appliance.wait_for_menu()
    timings["boot_to_console_menu_s"] = round(time.monotonic() - appliance.booted_at, 1)
    timings["boot_to_api_s"] = round(appliance.wait_for_api(), 1)

    assert_http_redirects(appliance)
    token = first_run_setup(appliance)
    revision = commit_service(appliance, token, tcp_backend)
    assert_checker_event_arrived(appliance, token, tcp_backend)
    revision = commit_bgp(appliance, token)

    with appliance.shell() as run:
        assert_no_failed_units(run)
        assert_read_only_root(run)
        assert_ipvs_has_service(run, tcp_backend)
        assert_time_sync(run)
        assert_notify_fifos(run)
        assert_frr_runs_the_written_configuration(run)
        assert_api_answers_over_ipv6(run)
        interface = management_interface(run)
        assert_address(appliance, run, interface, dynamic=True)  # DHCP on first boot
        data_bytes = int(run("df -B1 --output=size /data | tail -n 1", 30))
        assert data_bytes > 4 * 2**30, f"/data was not grown to the 8 GiB disk: {data_bytes} bytes"
        first_machine_id = run("cat /etc/machine-id", 30)
        first_host_key = host_key(run)

    # The console's management address on a network Fulcrum does not manage yet: taken over from
    # the kernel (the image's NTP servers kept) and committed through the API.
    network = assert_console_change_in_model(appliance, token, set_static_address(appliance, [DNS]), [DNS])
    assert network["ntp_servers"] == DEBIAN_NTP, network
    with appliance.shell() as run:
        assert_address(appliance, run, interface, dynamic=False)

    # The network through the API: taken over from the kernel, with a bond, a VLAN and a route.
    take_over_network_with_bond(appliance, token)
    assert_api_reads_back_bond(appliance, token)
    # The console again, now that the managed network's files outrank any file of its own: the
    # change (a second DNS server) reaches the model and resolved, and the bond stays.
    revision = set_static_address(appliance, [DNS, SECOND_DNS])
    assert_console_change_in_model(appliance, token, revision, [DNS, SECOND_DNS])
    console_refuses_gateway_off_the_network(appliance)
    assert_console_change_in_model(appliance, token, revision, [DNS, SECOND_DNS])
    with appliance.api(token) as api:
        newest = api.get("/revisions", params={"limit": 1}).json()["data"][0]["number"]
    assert newest == revision, f"the refused console change made revision {newest}"
    assert_api_reads_back_bond(appliance, token)
    with appliance.shell() as run:
        assert_kernel_has_bond(appliance, run)
        assert_address(appliance, run, interface, dynamic=False)
        assert SECOND_DNS in run("resolvectl dns", 30), "resolved does not have the console's DNS server"

    reset_password_at_console(appliance)
    token = login(appliance, CONSOLE_PASSWORD)  # the reset ended the sessions of the old password
    with appliance.api() as api:
        refused = api.post("/auth/login", json={"username": ADMIN, "password": FIRST_PASSWORD})
    assert refused.status_code == 401, f"the old password still works after the console reset: {refused.text}"

    # A backup of this configuration, taken on the first version (restored after the factory reset).
    backup = export_backup(appliance, token)

    # An upgrade whose API cannot start (the bundle's test-only fault): uploaded and installed into
    # slot B while slot A serves, it boots, the boot check finds the API crashing, marks slot B bad
    # and restarts; GRUB boots slot A again, and the node reports the roll-back with the reason,
    # running as before. (The good upgrade, both nodes of a pair to a new version through the API,
    # is test_image_pair.py's.) Across those two restarts the configuration, the certificate (the
    # API is pinned to it), the static address, the bond, the machine ID and the journal persist.
    faulty = building_bundle.result()
    started = time.monotonic()
    installed = upload_and_install(appliance, token, faulty, FAULTY_VERSION)
    timings["upload_and_install_s"] = round(time.monotonic() - started, 1)
    assert (installed["upgrade"]["from_slot"], installed["upgrade"]["to_slot"]) == ("A", "B"), installed
    reboot_through_api(appliance, token)
    timings["faulty_upgrade_to_api_back_s"] = round(appliance.wait_for_api(3 * BOOT_TIMEOUT), 1)
    token = login(appliance, CONSOLE_PASSWORD)
    firmware = wait_for_verdict(appliance, token, ("rolled_back",), VERDICT_TIMEOUT)
    assert_upgrade_rolled_back(firmware, FAULTY_VERSION, tried="B", kept="A")
    with appliance.api(token) as api:
        services = api.get("/services").json()["data"]
        assert [service["name"] for service in services] == ["web"], services
        status = api.get("/status").json()
    assert status["applied_revision"] == revision, f"after the roll-back the kernel does not run revision {revision}"
    assert status["dataplane"] and status["dataplane"]["keepalived_running"], status
    assert_bgp_read_back(appliance, token)
    with appliance.shell() as run:
        assert_no_failed_units(run)
        assert_ipvs_has_service(run, tcp_backend)
        assert_address(appliance, run, interface, dynamic=False)
        assert_kernel_has_bond(appliance, run)
        # The root is read-only; the machine ID and the journal still persist (on /data).
        assert run("cat /etc/machine-id", 30) == first_machine_id, "the machine ID changed across a reboot"
        assert run("journalctl -b -1 -q -n 1 --no-pager", 30), "the journal of the boot before the reboot is gone"
        assert run(f"cat {MARKER} 2>/dev/null || echo none", 30) == "none", "the roll-back did not return to slot A's system"
        boot_chooser = boot_statuses(run)
    assert boot_chooser == {"A": "good", "B": "bad"}, boot_chooser

    # A change that moves the management address, not confirmed: it locks the API out, then rolls
    # back by itself, and the API answers on the old address again.
    timings["lockout_to_api_back_s"] = move_management_unconfirmed(appliance, token, interface)

    # Console access: once an admin turns it on, the console asks for its password first.
    protect_console(appliance, token)

    # Factory reset: everything goes, the appliance comes back asking for its first admin (and
    # wait_for_menu sees the open console's menu: protection went with /data).
    factory_reset_from_menu(appliance)
    new_fingerprint = appliance.wait_for_menu()
    assert new_fingerprint != first_fingerprint, "factory reset kept the old TLS certificate"
    timings["factory_reset_to_api_s"] = round(appliance.wait_for_api(), 1)
    with appliance.api() as api:
        assert api.get("/setup").json() == {"needs_setup": True}
    with appliance.shell() as run:
        assert_no_failed_units(run)
        assert "192.0.2.10" not in run("ipvsadm -Ln", 30), "IPVS still has the service after a factory reset"
        assert_address(appliance, run, interface, dynamic=True)  # back to DHCP
        assert run(f"test -e /sys/class/net/{BOND} || echo gone", 30) == "gone", "factory reset kept the bond"
        assert run("cat /etc/machine-id", 30) != first_machine_id, "factory reset kept the machine ID"
        assert host_key(run) != first_host_key, "factory reset kept the SSH host key"
        boots = run("journalctl -F _BOOT_ID", 30).split()
        assert len(boots) == 1, f"factory reset kept the journal of earlier boots: {boots}"
        # The firmware is not configuration: the reset leaves the boot chooser as it was, once this
        # boot's check has marked slot A good again (until then GRUB counts it as on trial, "bad").
        wait_until(lambda: boot_statuses(run), VERDICT_TIMEOUT, interval=10, expect=boot_chooser,
                   what="the slots' boot status after the factory reset to be as before it")

    # The reset appliance is a fresh one on the same firmware: the backup taken before the faulty
    # upgrade restores from its first-run page, and it serves the same service again.
    restore_on_first_run(appliance, backup, first_fingerprint)
    token = login(appliance, CONSOLE_PASSWORD)  # the backup's accounts replaced first-run setup
    wait_for_restored_revision(appliance, token, revision)
    timings["factory_reset_to_restored_s"] = round(time.monotonic() - appliance.booted_at, 1)
    assert_bgp_read_back(appliance, token)  # this node's BGP is in the backup too
    with appliance.shell() as run:
        assert_no_failed_units(run)
        assert_ipvs_has_service(run, tcp_backend)
        # The network is in the backup too: the static address and the bond are back.
        assert_address(appliance, run, interface, dynamic=False)
        assert_kernel_has_bond(appliance, run)
        # So are the SSH host keys, installed by the helper, and sshd presents them.
        assert host_key(run) == first_host_key, "the backup's SSH host key was not restored"
        scanned = run("ssh-keyscan -t ed25519 127.0.0.1 2>/dev/null", 60).split()
        assert first_host_key in scanned, f"sshd does not present the restored host key: {scanned}"

    (appliance.results / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    print(f"\nimage test timings: {timings}")


# --- steps -----------------------------------------------------------------------------------


def assert_http_redirects(appliance: Appliance) -> None:
    answer = httpx.get(f"http://127.0.0.1:{appliance.http_port}/services?page=2", timeout=60)
    assert answer.status_code == 308, f"port 80 answered {answer.status_code}, not a redirect"
    assert answer.headers["location"] == "https://127.0.0.1/services?page=2", answer.headers


def first_run_setup(appliance: Appliance) -> str:
    with appliance.api() as api:
        assert api.get("/setup").json() == {"needs_setup": True}, "a fresh appliance must ask for its first admin"
        created = api.post("/setup", json={"username": ADMIN, "password": FIRST_PASSWORD})
        assert created.status_code in (200, 201), created.text
        assert api.get("/setup").json() == {"needs_setup": False}, "the first admin is not there right after /setup"
    token = str(created.json()["token"])
    assert_session_works(appliance, token)
    return token


def assert_session_works(appliance: Appliance, token: str) -> None:
    with appliance.api(token) as api:
        me = api.get("/auth/me")
    assert me.status_code == 200, f"the new session is refused: {me.status_code} {me.text}"


def commit_and_read(api: httpx.Client, message: str) -> tuple[int, dict[str, Any]]:
    """Commit the candidate; the revision's number and its apply result, which must be applied."""
    committed = api.post("/revisions", json={"message": message})
    assert committed.status_code in (200, 201), committed.text
    number = int(committed.json()["number"])
    fetched = api.get(f"/revisions/{number}")
    assert fetched.status_code == 200, f"revision {number} is not there right after the commit: {fetched.text}"
    result: dict[str, Any] = fetched.json()["apply_result"]
    assert result["outcome"] == "applied", f"revision {number} ({message}) was not applied: {result}"
    return number, result


def commit_service(appliance: Appliance, token: str, backend_port: int) -> int:
    with appliance.api(token) as api:
        created = api.post(
            "/services",
            json={"name": "web", "address": VIP, "ports": [80], "backends": [{"address": GATEWAY, "port": backend_port}]},
        )
        assert created.status_code == 201, created.text
        number, result = commit_and_read(api, "image test: one service")
    readback = [s for s in result["steps"] if s["step"] == "verify" and s["daemon"] == "keepalived"]
    assert readback and readback[0]["ok"], f"no successful IPVS read-back in {result['steps']}"
    return number


def commit_bgp(appliance: Appliance, token: str) -> int:
    """This node's BGP through the API: fulcrum-applyd writes /data/state/frr.conf (which
    /etc/frr/frr.conf links to), reloads frr.service's daemons with frr-reload.py and reads the
    session back from bgpd. No router answers at BGP_NEIGHBOR, and nothing is announced (the one
    service is NAT, which a router's ECMP must not spread): the wiring is what is proven here; the
    announcements themselves are the kernel VM's (tests/kernel/test_ecmp_cluster.py)."""
    with appliance.api(token) as api:
        saved = api.put("/bgp", json=BGP)
        assert saved.status_code == 200, saved.text
        number, result = commit_and_read(api, "image test: BGP")
    frr = [s for s in result["steps"] if s["daemon"] == "frr"]
    assert any(s["step"] == "verify" and s["ok"] for s in frr), f"no successful read-back from FRR in {frr}"
    assert_bgp_read_back(appliance, token)
    return number


def assert_bgp_read_back(appliance: Appliance, token: str) -> None:
    """The API's live view (bgpd and bfdd through the helper) has the configured session."""
    with appliance.api(token) as api:
        answer = api.get("/bgp/status")
    assert answer.status_code == 200, f"GET /bgp/status: {answer.status_code} {answer.text}"
    view = answer.json()
    assert view["managed"] and view["error"] is None, f"FRR is not managed or did not answer: {view}"
    assert [(n["address"], n["remote_asn"]) for n in view["neighbors"]] == [(BGP_NEIGHBOR, 65000)], view
    assert view["neighbors"][0]["bfd"] is not None, f"bfdd has no session for the neighbor: {view}"
    assert view["originated"] == [], view


def assert_frr_runs_the_written_configuration(run: Callable[[str, float], str]) -> None:
    assert run("systemctl is-active frr.service", 30) == "active"
    assert run("readlink -f /etc/frr/frr.conf", 30) == "/data/state/frr.conf"
    assert f"neighbor {BGP_NEIGHBOR} remote-as 65000" in run("cat /data/state/frr.conf", 30)
    daemons = run("vtysh -c 'show daemons'", 30).split()
    assert {"zebra", "bgpd", "bfdd"} <= set(daemons), f"FRR runs {daemons}"


def export_backup(appliance: Appliance, token: str) -> bytes:
    with appliance.api(token) as api:
        answer = api.post("/backup", json={"passphrase": BACKUP_PASSPHRASE}, timeout=120)
    assert answer.status_code == 200, f"the backup export failed: {answer.status_code} {answer.text}"
    return answer.content


def restore_on_first_run(appliance: Appliance, backup: bytes, backup_fingerprint: str) -> None:
    """A wrong passphrase is named and changes nothing; the right one restores the accounts, the
    configuration and the backup's TLS certificate, which the API presents from the next connection."""

    def restore(passphrase: str) -> httpx.Response:
        with appliance.api() as api:
            return api.post(
                "/setup/restore",
                content=backup,
                headers={"X-Fulcrum-Backup-Passphrase": quote(passphrase), "Content-Type": "application/octet-stream"},
                timeout=300,
            )

    refused = restore("not the backup's passphrase")
    assert refused.status_code == 400 and refused.json()["code"] == "wrong_passphrase", refused.text
    with appliance.api() as api:
        assert api.get("/setup").json() == {"needs_setup": True}, "a refused restore changed the fresh appliance"
    restored = restore(BACKUP_PASSPHRASE)
    assert restored.status_code == 201, f"the first-run restore failed: {restored.status_code} {restored.text}"
    manifest, notes = restored.json()["manifest"], restored.json()["notes"]
    assert manifest["includes"]["tls"] and manifest["includes"]["revisions"] >= 1, manifest
    assert not [note for note in notes if "not installed" in note], f"part of the backup was left out: {notes}"
    assert any(note.startswith("SSH host keys: installed") and note.endswith("sshd reloaded") for note in notes), notes
    # From the next connection the API presents the backup's certificate: pinned from here on.
    appliance.fingerprint = backup_fingerprint
    with appliance.api() as api:
        assert api.get("/setup").json() == {"needs_setup": False}, "the restore did not bring the backup's accounts"


def wait_for_restored_revision(appliance: Appliance, token: str, revision: int) -> None:
    """The restored running revision is applied in the background, as at start-up: the engine's
    own applied revision says when (the status's top-level one is the database's, restored at once)."""
    deadline = time.monotonic() + RESTORE_APPLY_TIMEOUT
    with appliance.api(token) as api:
        while ((status := api.get("/status").json())["dataplane"] or {}).get("applied_revision") != revision:
            if time.monotonic() > deadline:
                reapplied = [e for e in api.get("/audit").json()["data"] if e["action"] == "revision.reapply"]
                raise AssertionError(f"the restored revision {revision} is not running: {status}; {reapplied}")
            time.sleep(3)
        services = api.get("/services").json()["data"]
    assert status["dataplane"]["keepalived_running"], status
    assert [service["name"] for service in services] == ["web"], services


def boot_statuses(run: Callable[[str, float], str]) -> dict[str, str]:
    """Each slot's boot status as RAUC reads it from GRUB's environment: bootname -> good or bad."""
    lines = run("rauc status --output-format=shell | grep -E '^RAUC_SLOT_(BOOTNAME|BOOT_STATUS)_'", 60)
    found = dict(line.strip().split("=", 1) for line in lines.splitlines() if "=" in line)
    values = {key: value.strip("'\"") for key, value in found.items()}
    return {name: values.get(key.replace("BOOTNAME", "BOOT_STATUS"), "?")
            for key, name in values.items() if key.startswith("RAUC_SLOT_BOOTNAME_")}  # fmt: skip


def host_key(run: Callable[[str, float], str]) -> str:
    """The base64 of the appliance's ed25519 SSH host public key."""
    return run("cut -d' ' -f2 /data/ssh/ssh_host_ed25519_key.pub", 30)


def login(appliance: Appliance, password: str) -> str:
    with appliance.api() as api:
        answer = api.post("/auth/login", json={"username": ADMIN, "password": password})
    assert answer.status_code == 200, f"login as {ADMIN} failed: {answer.status_code} {answer.text}"
    token = str(answer.json()["token"])
    assert_session_works(appliance, token)
    return token


def assert_ipvs_has_service(run: Callable[[str, float], str], backend_port: int) -> None:
    table = run("ipvsadm -Ln", 30)
    assert re.search(rf"TCP\s+{re.escape(VIP)}:80\s+wlc", table), f"no virtual service {VIP}:80 in IPVS:\n{table}"
    # The backend is alive (this test's listener), so keepalived's TCP check keeps it in IPVS.
    assert re.search(rf"->\s+{re.escape(GATEWAY)}:{backend_port}\s+Masq\s+1\b", table), (
        f"real server {GATEWAY}:{backend_port} missing from IPVS:\n{table}"
    )


def assert_no_failed_units(run: Callable[[str, float], str]) -> None:
    """Once start-up has finished, no unit has failed: on a read-only root, whatever still tries
    to write outside /data and the tmpfs mounts fails, and shows up here."""
    state = run("systemctl is-system-running --wait || true", 300)
    failed = run("systemctl --failed --no-legend --plain", 30)
    assert not failed, f"failed units (system {state}):\n{failed}"


def assert_read_only_root(run: Callable[[str, float], str]) -> None:
    options = run("findmnt -no OPTIONS /", 30).split(",")
    assert "ro" in options, f"the root file system is mounted {options}, not read-only"
    for path in ("/usr", "/etc"):
        answer = run(f"touch {path}/fulcrum-write-test 2>&1; echo status=$?", 30)
        assert "Read-only file system" in answer and "status=0" not in answer, f"root could write to {path}: {answer}"
    # What must be writable is on /data or in memory.
    mounts = dict(line.split(" ", 1) for line in run("findmnt -rn -o TARGET,SOURCE,FSTYPE", 30).splitlines())
    assert re.fullmatch(r"/dev/\S+ ext4", mounts.get("/data", "")), f"/data: {mounts.get('/data')}"
    log = mounts.get("/var/log", "")
    assert re.fullmatch(r"/dev/\S+\[/log\] ext4", log), f"/var/log is not the data partition's /log: {log}"
    for path in ("/tmp", "/var/tmp"):
        assert mounts.get(path) == "tmpfs tmpfs", f"{path}: {mounts.get(path)}"
    run("(set -e; for d in /data /var/log /tmp /var/tmp; do touch $d/fulcrum-write-test; rm $d/fulcrum-write-test; done)", 30)


def assert_time_sync(run: Callable[[str, float], str]) -> None:
    """systemd-timesyncd runs with the servers of /data/network/timesyncd.conf (Debian's pool)."""
    assert run("systemctl is-active systemd-timesyncd.service || true", 30) == "active"
    shown = dict(line.split("=", 1) for line in run("timedatectl show", 30).splitlines() if "=" in line)
    assert shown.get("NTP") == "yes", f"timedatectl reports NTP off: {shown}"
    servers = run("timedatectl show-timesync -p SystemNTPServers --value", 30).split()
    assert servers and all(server.endswith(".debian.pool.ntp.org") for server in servers), servers


def assert_api_answers_over_ipv6(run: Callable[[str, float], str]) -> None:
    """The API listens on IPv6 too (one socket for both families): HTTPS to [::1] from the shell."""
    fetch = (
        "import ssl, urllib.request; "
        "print(urllib.request.urlopen('https://[::1]/api/v1/health', "
        "context=ssl._create_unverified_context(), timeout=30).status)"
    )
    assert run(f'python3 -c "{fetch}"', 60) == "200", "the API does not answer over IPv6"


def assert_notify_fifos(run: Callable[[str, float], str]) -> None:
    """keepalived writes its VRRP and checker events to the FIFOs the API reads (fulcrum.env)."""
    conf = run("cat /data/state/keepalived.conf", 30)
    for directive, path in (("vrrp_notify_fifo", "/data/fulcrum/vrrp.fifo"), ("lvs_notify_fifo", "/data/fulcrum/lvs.fifo")):
        assert f"{directive} {path} " in conf, f"keepalived.conf has no '{directive} {path}':\n{conf}"
        assert run(f"test -p {path} && echo fifo", 30) == "fifo", f"{path} is not a FIFO"


def assert_checker_event_arrived(appliance: Appliance, token: str, backend_port: int) -> None:
    """The new real server passed its first check (alpha): keepalived's line in the checkers' FIFO
    reached the API as a backend_up event."""
    backend = f"{GATEWAY}:{backend_port}"
    deadline = time.monotonic() + 120
    with appliance.api(token) as api:
        while True:
            events = api.get("/events", params={"kind": "backend_up"}).json()["data"]
            if any(event["backend"] == backend for event in events):
                return
            assert time.monotonic() < deadline, f"no backend_up event for {backend} from the notify FIFO: {events}"
            time.sleep(2)


def management_interface(run: Callable[[str, float], str]) -> str:
    routes = json.loads(run("ip -j -4 route show default", 30))
    assert routes, "no default route on the appliance"
    return str(routes[0]["dev"])


def assert_address(appliance: Appliance, run: Callable[[str, float], str], interface: str, dynamic: bool) -> None:
    addresses = [a for a in appliance.ip_addresses(run, interface) if a["local"] == GUEST]
    assert addresses, f"{interface} does not have {GUEST}"
    kind = "DHCP" if dynamic else "static"
    assert bool(addresses[0].get("dynamic")) == dynamic, f"{GUEST} on {interface} is not {kind}: {addresses[0]}"


def set_static_address(appliance: Appliance, dns: list[str]) -> int:
    """The console menu's management address: committed through the API (its console token), the
    network model and the engine. Returns the revision the console reports."""
    appliance.choose("2")
    appliance.answer("Mode: static or dhcp [static]: ", "static")
    appliance.answer("Address with prefix length, e.g. 192.0.2.10/24: ", f"{GUEST}/24")
    appliance.answer("Gateway (empty: none): ", GATEWAY)
    appliance.answer("DNS servers, separated by spaces (empty: none): ", " ".join(dns))
    appliance.answer("(yes/no) [no]: ", "yes")
    committed = appliance.expect(re.compile(rb"Revision (\d+) \((\w+)\)|Nothing changed: [^\r\n]*"), 240,
                                 "the console's commit through the API")
    assert committed.group(2) == b"applied", f"the console's change was not applied: {committed.group(0)!r}"
    appliance.expect(f"now has {GUEST}/24 (static)", 60, "the static address to be applied")
    appliance.expect("Choose 1-8: ", 60, "the menu")
    return int(committed.group(1))


def console_refuses_gateway_off_the_network(appliance: Appliance) -> None:
    """A gateway outside the address's network: the API's refusal, at its field, and nothing changes."""
    appliance.choose("2")
    appliance.answer("Mode: static or dhcp [static]: ", "static")
    appliance.answer("Address with prefix length, e.g. 192.0.2.10/24: ", f"{GUEST}/24")
    appliance.answer("Gateway (empty: none): ", OFF_NETWORK_GATEWAY)
    appliance.answer("DNS servers, separated by spaces (empty: none): ", "")
    appliance.answer("(yes/no) [no]: ", "yes")
    appliance.expect("Nothing changed: gateway: ", 240, "the API's refusal of the gateway")
    appliance.expect("Choose 1-8: ", 60, "the menu")


def assert_console_change_in_model(appliance: Appliance, token: str, revision: int, dns: list[str]) -> dict[str, Any]:
    """The console's revision, read back from the API: by the console, applied, with the address."""
    with appliance.api(token) as api:
        committed = api.get(f"/revisions/{revision}").json()
        network = api.get("/network").json()
    assert (committed["author"], committed["state"]) == ("console", "applied"), committed
    assert network is not None, "the console's change left the network unmanaged"
    management = next(nic for nic in network["nics"] if nic["name"] == network["management_interface"])
    assert management["addresses"] == [f"{GUEST}/24"] and not management["dhcp4"], management
    assert (network["gateway4"], network["dns_servers"]) == (GATEWAY, dns), network
    assert committed["snapshot"]["network"] == network
    return network


def reset_password_at_console(appliance: Appliance) -> None:
    appliance.choose("3")
    appliance.answer(f"Administrator ({ADMIN}) [{ADMIN}]: ", "", timeout=180)
    appliance.answer("New password (12 characters or more): ", CONSOLE_PASSWORD)
    appliance.answer("Again: ", CONSOLE_PASSWORD)
    appliance.expect(f"The password of {ADMIN} is changed", 180, "the console password reset")
    appliance.expect("Choose 1-8: ", 60, "the menu")


def protect_console(appliance: Appliance, token: str) -> None:
    with appliance.api(token) as api:
        answer = api.put("/node/console", json={"password_required": True, "password": CONSOLE_LOCK_PASSWORD})
        assert answer.status_code == 200, f"turning console protection on failed: {answer.text}"
        assert api.get("/node/console").json()["password_required"] is True
    # The menu drawn before protection was turned on still waits: the shell chosen there must
    # get the password prompt, not a shell.
    appliance.choose("8")
    appliance.answer("Console password: ", "not the console password", timeout=120)
    appliance.expect("Wrong password.", 60, "the wrong password to be refused")
    appliance.answer("Console password: ", CONSOLE_LOCK_PASSWORD)
    appliance.expect("Choose 0-8: ", 60, "the menu after the right password")


def factory_reset_from_menu(appliance: Appliance) -> None:
    appliance.choose("5")
    appliance.answer("Type ERASE to erase everything: ", "ERASE")
    appliance.expect("Rebooting; /data is erased as the appliance starts.", 180, "the factory reset to begin")
    appliance.booted_at = time.monotonic()
    appliance.expect("fulcrum-data: factory reset: /data erased", BOOT_TIMEOUT, "/data to be erased at boot")


# --- the appliance's own network -------------------------------------------------------------

Shell = Callable[[str, float], str]


def take_over_document(api: httpx.Client) -> dict[str, Any]:
    """What the dashboard's "Manage this node's network" starts from (GET /network/takeover, the
    kernel's network as the appliance reads it), checked, and then edited as an admin would: a bond
    of the two spare NICs with a VLAN, an address and a route on it, and the DNS server the
    console set (the kernel's interfaces do not say it)."""
    answer = api.get("/network/takeover", params={"address": GUEST})
    assert answer.status_code == 200, f"GET /network/takeover: {answer.status_code} {answer.text}"
    proposal: dict[str, Any] = answer.json()
    nics = {nic["mac"]: nic for nic in proposal["nics"]}
    assert all(mac in nics for mac in EXTRA_NIC_MACS), f"the spare NICs {EXTRA_NIC_MACS} are missing: {proposal}"
    management = next(nic for nic in proposal["nics"] if nic["name"] == proposal["management_interface"])
    assert management["addresses"] == [f"{GUEST}/24"] and not management["dhcp4"], management
    assert (proposal["gateway4"], proposal["hostname"], proposal["ntp_servers"]) == (GATEWAY, "fulcrum", DEBIAN_NTP), proposal
    members = [nics[mac]["name"] for mac in EXTRA_NIC_MACS]
    return {
        **proposal,
        "bonds": [{"name": BOND, "members": members, "mode": "active-backup"}],
        "vlans": [{"name": VLAN, "parent": BOND, "vlan_id": VLAN_ID, "addresses": [VLAN_ADDRESS]}],
        "routes": [{"destination": ROUTE_DESTINATION, "gateway": VLAN_GATEWAY, "table": ROUTE_TABLE}],
        "dns_servers": [DNS],
    }


def take_over_network_with_bond(appliance: Appliance, token: str) -> int:
    """Take the network over with the bond, committed with a confirm deadline and confirmed (the
    console managed it already: whether the management NIC's configuration changes depends on what
    the kernel shows, SLAAC say, so the commit may also apply without awaiting confirmation).
    Returns the revision."""
    with appliance.api(token) as api:
        document = take_over_document(api)
        # As on a fresh appliance: the node's VRRP interface is still its default (eth0, which
        # no NIC here is called), and without a VIP group that does not stand in the way.
        put = api.put("/network", json=document)
        assert put.status_code == 200, f"PUT /network refused the take-over: {put.status_code} {put.text}"
        committed = api.post("/revisions", json={"message": "image test: bond, VLAN, route", "confirm_within": 120})
        assert committed.status_code == 201, f"the network's commit failed: {committed.text}"
        revision = committed.json()
        assert revision["apply_result"]["outcome"] == "applied", revision["apply_result"]
        if revision["state"] == "awaiting_confirm":
            confirmed = api.post(f"/revisions/{revision['number']}/confirm")
            assert confirmed.status_code == 200, f"confirming revision {revision['number']} failed: {confirmed.text}"
            assert confirmed.json()["state"] == "applied", confirmed.json()
        else:
            assert revision["state"] == "applied", revision
    return int(revision["number"])


def assert_api_reads_back_bond(appliance: Appliance, token: str) -> None:
    with appliance.api(token) as api:
        interfaces = {i["name"]: i for i in api.get("/network/interfaces").json()}
        routes = api.get("/network/routes").json()
    bond, vlan = interfaces.get(BOND), interfaces.get(VLAN)
    # A member's current MAC is the bond's: the members are known by their master here.
    members = sorted(name for name, i in interfaces.items() if i["bond_master"] == BOND and i["kind"] == "physical")
    assert bond and bond["kind"] == "bond" and sorted(bond["bond_members"]) == members and len(members) == 2, bond
    assert vlan and vlan["kind"] == "vlan" and VLAN_ADDRESS in vlan["prefixed_addresses"], vlan
    assert all(interfaces[name]["configured"] for name in (BOND, VLAN, *members)), interfaces
    wanted = {"destination": ROUTE_DESTINATION, "gateway": VLAN_GATEWAY, "interface": VLAN, "table": ROUTE_TABLE}
    assert any(wanted.items() <= route.items() for route in routes), f"no {wanted} in the API's routes: {routes}"


def assert_kernel_has_bond(appliance: Appliance, run: Shell) -> None:
    """Read from the kernel over the serial console, not through the API or the engine's read-back."""
    bonding = run(f"cat /proc/net/bonding/{BOND}", 30)
    assert "Bonding Mode: fault-tolerance (active-backup)" in bonding, bonding
    members = re.findall(r"^Permanent HW addr: (\S+)$", bonding, re.MULTILINE)
    assert sorted(members) == sorted(EXTRA_NIC_MACS), f"{BOND}'s members are not the spare NICs:\n{bonding}"
    up = re.findall(r"^MII Status: up$", bonding, re.MULTILINE)
    assert len(up) == 1 + len(EXTRA_NIC_MACS), f"{BOND} or a member is down:\n{bonding}"
    links = {link["ifname"]: link for link in json.loads(run("ip -d -j link show", 30))}
    info = links.get(VLAN, {}).get("linkinfo", {})
    assert info.get("info_kind") == "vlan" and info["info_data"]["id"] == VLAN_ID, links.get(VLAN)
    assert links[VLAN].get("link") == BOND, f"{VLAN} is on {links[VLAN].get('link')}, not {BOND}"
    assert VLAN_ADDRESS in [f"{a['local']}/{a['prefixlen']}" for a in appliance.ip_addresses(run, VLAN)]
    routes = json.loads(run("ip -j route show table all", 30))
    found = [r for r in routes if r.get("dst") == ROUTE_DESTINATION and str(r.get("table")) == str(ROUTE_TABLE)]
    assert [(r.get("gateway"), r.get("dev")) for r in found] == [(VLAN_GATEWAY, VLAN)], f"table {ROUTE_TABLE}: {found}"


def move_management_unconfirmed(appliance: Appliance, token: str, interface: str) -> float:
    """Commit a move of the management address with a short deadline and do not confirm it.

    The commit's answer cannot come back (it would leave from the address just removed), so it is
    sent from a thread while the test watches the lock-out: the API gone from the forwarded port
    and the kernel holding the new address. Then, by itself, the old address and the API return.
    Returns the seconds from the lock-out read on the console to the API answering again."""
    with appliance.api(token) as api:
        network = api.get("/network").json()
        put = api.put("/network", json=moved_management(network, MOVED_GUEST))
        assert put.status_code == 200, f"PUT /network refused the move: {put.status_code} {put.text}"
    message = "image test: move the management address, unconfirmed"
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(commit_locking_out, appliance, token, message)
        appliance.wait_for_api_gone(timeout=180)
        with appliance.shell() as run:
            held = [a["local"] for a in appliance.ip_addresses(run, interface)]
            assert MOVED_GUEST in held and GUEST not in held, f"while locked out {interface} has {held}"
        locked_out_at = time.monotonic()
        appliance.wait_for_api(timeout=UNCONFIRMED_SECONDS + 300)
        back_after = round(time.monotonic() - locked_out_at, 1)
        assert_commit_answer(answer)
    assert_rolled_back(appliance, token, message, interface)
    return back_after


def moved_management(network: dict[str, Any], address: str) -> dict[str, Any]:
    management = network["management_interface"]
    nics = [{**nic, "addresses": [f"{address}/24"]} if nic["name"] == management else nic for nic in network["nics"]]
    return {**network, "nics": nics}


def commit_locking_out(appliance: Appliance, token: str, message: str) -> httpx.Response:
    with appliance.api(token) as api:
        body = {"message": message, "confirm_within": UNCONFIRMED_SECONDS}
        return api.post("/revisions", json=body, timeout=UNCONFIRMED_SECONDS * 2)


def assert_commit_answer(answer: Future[httpx.Response]) -> None:
    """The commit either never answered (the lock-out) or said it awaits confirmation."""
    try:
        response = answer.result()
    except httpx.TransportError:
        return
    assert response.status_code == 201 and response.json()["state"] == "awaiting_confirm", response.text


def assert_rolled_back(appliance: Appliance, token: str, message: str, interface: str) -> None:
    with appliance.api(token) as api:

        def moved_revision() -> dict[str, Any] | None:
            return next((r for r in api.get("/revisions").json()["data"] if r["message"] == message), None)

        # The API answers again as soon as the roll-back's network is up, while the roll-back goes on
        # (the other daemons, the read-back): the revisions record its outcome when it has one.
        moved = wait_until(
            lambda: (found := moved_revision()) and found["state"] != "awaiting_confirm" and found,
            RESTORE_APPLY_TIMEOUT,
            what="the unconfirmed move's roll-back to be recorded",
            interval=2,
        )
        revisions = api.get("/revisions").json()["data"]
        network = api.get("/network").json()
    assert moved["state"] == "reverted", f"the move did not end reverted: {moved}"
    after = [r for r in revisions if r["number"] > moved["number"]]
    assert [(r["rollback_of"], r["state"]) for r in after] == [(moved["previous"], "applied")], after
    assert after[0]["message"].startswith(f"automatic rollback: revision {moved['number']} was not confirmed"), after
    management = next(n for n in network["nics"] if n["name"] == network["management_interface"])
    assert management["addresses"] == [f"{GUEST}/24"], f"the candidate kept the move: {management}"
    with appliance.shell() as run:
        held = [a["local"] for a in appliance.ip_addresses(run, interface)]
        assert GUEST in held and MOVED_GUEST not in held, f"after the rollback {interface} has {held}"
        assert_address(appliance, run, interface, dynamic=False)
        assert_kernel_has_bond(appliance, run)
