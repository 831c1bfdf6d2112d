"""The HA pair as shipped: two appliance images under emulation, configured only through their
HTTPS APIs (image_pair.py draws the network). A boots with BIOS, B with UEFI, where the firmware
checks run too (firmware_checks.py).

Both boot side by side. Each gets its first admin, its network (the management NIC kept on DHCP,
a static address on each of the front, back and sync NICs, its host name and NTP servers; commit-
confirmed, because the management NIC's configuration changes hands) and its node settings. A gets
the VIP groups (a front VIP, the backends' gateway) and two NAT services; pairing over the sync
link, HTTPS with each side pinning the other's certificate, gives B the rest. The client then
holds an echo session and makes HTTP requests through the VIP while A is powered off (qemu's
`quit`): B takes over, the session survives (IPVS connection sync on the sync NIC), and the failed
requests are counted. A powered on again rejoins as standby, in sync, and B keeps the VIPs.
B then upgrades the pair with one failover (POST /ha/upgrade), a signed bundle of a new version
uploaded to it: A first, the VIPs to A once, then B (upgrade_pair says what is checked).

Five boots under TCG (two side by side) and two installs, plus `make vm-image` when its inputs
changed. The serial logs, the client's requests and the figures are kept in tests/image/results/.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from appliance import Appliance
from firmware_checks import assert_booted_by_uefi, assert_firmware_slots_and_bundle_checks
from image_pair import BACKEND_NUMBERS, FRONT_VIP, SEGMENTS, ImagePair, image_pair, node_address, tap_mac
from lab import client
from lab.api_client import ApiClient
from lab.pair import CHECK, ECHO_PORT, GATEWAY, Probe, outage
from lab.wait import wait_until
from upgrade_checks import GOOD_VERSION, OCTETS, UPLOAD_TIMEOUT, assert_upgraded, make_bundle

pytestmark = pytest.mark.image

ADMIN, PASSWORD = "admin", "the pair's admin passphrase"
PRIORITY = {"a": 150, "b": 100}
VIP_GROUPS = {"front": (51, [f"{FRONT_VIP}/32"]), "gateway": (52, [f"{GATEWAY}/24"])}  # name: (VRID, addresses)
GUEST = "10.0.2.15"  # the management address qemu's DHCP gives each VM on its own user network
CLOCK_SYNC_DEADLINE = 120  # timesyncd asks its new server at once, then the kernel is told
# Pairing to in sync, a failover, a rejoin: the emulated VMs take seconds for a commit.
PAIRING_DEADLINE = 300
FAILOVER_DEADLINE = 60
PROBE_RATE = 5  # HTTP requests per second through the VIP, each on a new connection
# Both nodes installed and restarted one after the other, under emulation: 276 s here (2026-12-01),
# 602 and 671 s on the slower machine before; the deadline only ends a hung upgrade.
PAIR_UPGRADE_DEADLINE = 3600
# The echo session held through the upgrade: lines sent per poll of its record (every 5 s or so),
# about 10 packets, so the active node syncs it (sync_threshold 3 50) every 25 s or so; and how
# long one line may take, through a hand-over or a node's restart (TCP retransmits meanwhile).
SESSION_LINES_PER_POLL = 5
SESSION_TIMEOUT = 30.0
# Two emulated VMs on two host cores: a start of the node-health check's Python took over its 12 s
# allowance at the default 1 s interval (back to back, one run skipped while the last one ran),
# and the nodes flapped into FAULT. /data/etc/fulcrum.env gives the slack the kernel lab's pair
# gets too (lab.pair.NODE_HEALTH_ENV); a failover on power-off is VRRP's, and does not wait for it.
EMULATION_SLACK = {
    "FULCRUM_NODE_HEALTH_INTERVAL": "15",
    "FULCRUM_NODE_HEALTH_TIMEOUT": "10",  # per probe; keepalived allows 2 x 10 + 10 s per run
    "FULCRUM_NODE_HEALTH_RISE": "1",
    "FULCRUM_STATS_INTERVAL": "5",
}


@pytest.fixture
def pair(image: Path, results: Path) -> Iterator[ImagePair]:
    with image_pair(image, results) as booted:
        yield booted


def test_image_pair_fails_over_rejoins_and_is_upgraded(pair: ImagePair, results: Path, tmp_path: Path) -> None:
    figures: dict[str, Any] = {}
    # The upgrade's bundle is cut and signed while the appliances boot (a minute of CPU).
    bundle_maker = ThreadPoolExecutor(max_workers=1)
    building_bundle = bundle_maker.submit(make_bundle, tmp_path, GOOD_VERSION, False)
    bundle_maker.shutdown(wait=False)
    for vm in pair.appliances.values():
        vm.wait_for_menu()
        give_emulation_slack(vm)
    figures["boot_to_api_s"] = {node: round(vm.wait_for_api(), 1) for node, vm in pair.appliances.items()}
    apis = {node: first_admin(vm) for node, vm in pair.appliances.items()}
    assert_booted_by_uefi(pair.b)
    assert_firmware_slots_and_bundle_checks(pair.b, apis["b"], tmp_path)

    nics = {node: configure_network(node, api, pair.ntp_server) for node, api in apis.items()}
    for node, api in apis.items():
        assert_clock_synchronised(node, api)
    with pair.a.shell() as run:
        server = run("timedatectl show-timesync -p ServerAddress --value", 30)
    assert server == pair.ntp_server, f"A's clock follows {server!r}, not the lab's NTP server"
    for node, api in apis.items():
        api.put("/node", node_settings(node, nics[node]))
    a, b = apis["a"], apis["b"]
    configure_services(a, pair)
    a.commit("image pair: VIP groups and services")
    wait_for_roles(a, {"front": "MASTER", "gateway": "MASTER"}, "A alone to hold both VIP groups")

    started = time.monotonic()
    pair_nodes(a, b)
    wait_for_roles(b, {"front": "BACKUP", "gateway": "BACKUP"}, "B to run the replicated groups as BACKUP")
    figures["pairing_to_in_sync_s"] = round(time.monotonic() - started, 1)
    status = b.get("/ha/status")
    assert status["node"]["role"] == "standby" and status["sync"]["state"] == "in_sync", status
    assert status["conn_sync"]["local_daemon"] == "backup", status["conn_sync"]

    probe = Probe(pair.client, [(FRONT_VIP, 80)], rate=PROBE_RATE, timeout=1.0, log_path=results / "probe.log")
    probe.start()
    backends_seen = {r.detail.split()[-1] for r in probe.wait_for_requests(time.monotonic(), 10, timeout=120)}
    assert backends_seen == {f"b{n - 20}" for n in BACKEND_NUMBERS}, f"round robin reached {backends_seen}"
    session = client.hold_tcp(pair.client, FRONT_VIP, ECHO_PORT, timeout=5)
    for n in range(5):  # IPVS syncs a connection from its 3rd packet on (sync_threshold 3 50)
        assert client.exchange(session, f"before {n}\n".encode()) == f"before {n}\n".encode()
    local_port = session.getsockname()[1]
    assert_standby_holds_connection(pair.b, f"{pair.client.address}:{local_port}")

    # Power A off while the client's requests run: B takes over; the echo session survives.
    injected = time.monotonic()
    pair.a.power_off()
    wait_for_roles(b, {"front": "MASTER", "gateway": "MASTER"}, "B to take over both VIP groups",
                   timeout=FAILOVER_DEADLINE)
    probe.wait_for_requests(injected, 10, timeout=FAILOVER_DEADLINE)
    assert client.exchange(session, b"after the failover\n") == b"after the failover\n"
    seen = outage(probe, injected, time.monotonic())
    figures["failover"] = {
        "requests": len(seen.requests),
        "failed": len(seen.failed),
        "recovered_after_s": round(seen.recovered_after, 2),
    }

    # Power A on again: it rejoins as the standby, in sync, and B keeps every VIP.
    pair.a.start()
    pair.a.wait_for_menu()
    figures["power_on_to_api_s"] = round(pair.a.wait_for_api(), 1)
    a = pair.a.client()
    a.login(ADMIN, PASSWORD)
    rejoined = time.monotonic()
    wait_for_roles(a, {"front": "BACKUP", "gateway": "BACKUP"}, "A to rejoin as BACKUP")
    wait_until(lambda: a.get("/ha/status")["sync"]["state"] == "in_sync", PAIRING_DEADLINE,
               what="A back in sync with B", interval=2)
    figures["api_to_in_sync_s"] = round(time.monotonic() - rejoined, 1)
    assert {g["state"] for g in b.get("/ha/status")["node"]["groups"]} == {"MASTER"}, "B lost a VIP group"
    assert client.exchange(session, b"after the rejoin\n") == b"after the rejoin\n"
    since_rejoin = [r for r in probe.requests() if r.started >= rejoined]
    figures["failed_after_rejoin"] = sum(not r.ok for r in since_rejoin)
    assert since_rejoin and figures["failed_after_rejoin"] == 0, "requests failed while A rejoined"
    session.close()

    # Upgrade the pair from B, the active node now: A first, then the one failover back to A, then B.
    upgrade_pair(pair, active=b, standby=a, bundle=building_bundle.result(), probe=probe, figures=figures)

    (results / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\nimage pair figures: {figures}")


# --- steps -----------------------------------------------------------------------------------


def upgrade_pair(pair: ImagePair, active: ApiClient, standby: ApiClient, bundle: Path, probe: Probe,
                 figures: dict[str, Any]) -> None:
    """POST /ha/upgrade on the active node (B) with a bundle uploaded there: the standby (A) is
    upgraded and restarted first, the VIPs move to it once, then B is upgraded and rejoins as the
    standby. Both then run the bundle's version from slot B, marked good, in sync; A entered MASTER
    once per VIP group and B never, from the start of the upgrade; an echo session open through
    the VIP all along, in use, survives the hand-over and both restarts."""
    with bundle.open("rb") as body:
        kept = active.call("POST", "/firmware/bundle", content=body, headers=OCTETS, timeout=UPLOAD_TIMEOUT,
                           expect=201)
    assert kept["version"] == GOOD_VERSION, kept
    # In use: a line at least every poll, so the restarted standby's table gets it from the active
    # node's connection sync (by packet count) before the hand-over, which waits for that.
    session = client.hold_tcp(pair.client, FRONT_VIP, ECHO_PORT, timeout=SESSION_TIMEOUT)
    echoes: list[str | None] = []  # None for a line echoed intact, else what went wrong

    def echo_lines(count: int) -> None:
        for _ in range(count):
            if echoes and echoes[-1] is not None:
                return  # the session is gone: the failure is recorded
            line = f"upgrade {len(echoes)}\n".encode()
            try:
                back = client.exchange(session, line)
                echoes.append(None if back == line else f"{line!r} came back as {back!r}")
            except OSError as error:
                echoes.append(f"{line!r}: {error!r}")

    echo_lines(5)
    assert echoes == [None] * 5, echoes
    since = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()  # both clocks follow the lab's NTP server
    started = time.monotonic()
    record = active.post("/ha/upgrade", expect=202)["upgrade"]
    assert (record["node"], record["peer"], record["version"]) == ("fulcrum-b", "fulcrum-a", GOOD_VERSION), record

    def finished() -> dict[str, Any] | None:
        echo_lines(SESSION_LINES_PER_POLL)
        for vm in pair.appliances.values():
            vm.drain_console()
        try:
            current: dict[str, Any] | None = active.get("/ha/upgrade")["upgrade"]
        except Exception:  # noqa: BLE001 (B restarts itself in the last steps: its API is away meanwhile)
            return None
        return current if current and current["state"] != "running" else None

    final = wait_until(finished, PAIR_UPGRADE_DEADLINE, what="the pair upgrade to end", interval=5)
    figures["pair_upgrade_s"] = round(time.monotonic() - started, 1)
    figures["pair_upgrade_steps_s"] = {
        step["name"]: round((datetime.fromisoformat(step["ended_at"]) - datetime.fromisoformat(step["started_at"]))
                            .total_seconds(), 1)
        for step in final["steps"] if step["started_at"] and step["ended_at"]
    }  # fmt: skip
    figures["pair_upgrade_step_details"] = {step["name"]: step["detail"] for step in final["steps"]}
    assert final["state"] == "done", json.dumps(final, indent=1)
    assert [step["state"] for step in final["steps"]] == ["done"] * 7, final
    # The hand-over says how long it took and, if it first waited for A's synced connections, that.
    hand_over = figures["pair_upgrade_step_details"]["hand_over"]
    assert re.fullmatch(r"fulcrum-a holds every VIP after \d+ ms( \(\d+ s for its synced connections first: "
                        r"\d+ of \d+\))?", hand_over), hand_over  # fmt: skip

    for api in (active, standby):
        firmware = api.get("/firmware")
        assert_upgraded(firmware, "B", GOOD_VERSION)
    a_status, b_status = standby.get("/ha/status"), active.get("/ha/status")
    assert a_status["node"]["role"] == "active" and b_status["node"]["role"] == "standby", (a_status, b_status)
    assert a_status["node"]["software_version"] == b_status["node"]["software_version"] == GOOD_VERSION
    wait_until(lambda: standby.get("/ha/status")["sync"]["state"] == "in_sync", PAIRING_DEADLINE,
               what="the upgraded pair in sync", interval=2)
    masters = {name: masters_since(api, since) for name, api in (("a", standby), ("b", active))}
    assert masters == {"a": {"VG_front": 1, "VG_gateway": 1}, "b": {}}, f"MASTER entries since the upgrade began: {masters}"
    during = [r for r in probe.requests() if r.started >= started]
    figures["pair_upgrade_requests"] = {"total": len(during), "failed": sum(not r.ok for r in during)}
    echo_lines(1)
    figures["pair_upgrade_session_lines"] = len(echoes)
    assert not any(echoes), f"the echo session broke during the pair upgrade: {[e for e in echoes if e]}"
    session.close()
    assert probe.wait_for_requests(time.monotonic(), 5, timeout=FAILOVER_DEADLINE), "no service after the upgrade"


def masters_since(api: ApiClient, since: str) -> dict[str, int]:
    """How many times each VRRP instance of the node entered MASTER since `since`."""
    counts: dict[str, int] = {}
    for event in api.events(kind="vrrp_state", since=since, limit=1000):
        detail = event["detail"]
        if detail["scope"] == "INSTANCE" and detail["state"] == "MASTER":
            counts[detail["name"]] = counts.get(detail["name"], 0) + 1
    return counts


def give_emulation_slack(vm: Appliance) -> None:
    """Root's site overrides (overlay/usr/lib/fulcrum/fulcrum.env), from the console's shell."""
    lines = " ".join(f"'{key}={value}'" for key, value in EMULATION_SLACK.items())
    with vm.shell() as run:
        run(f"mkdir -p /data/etc && printf '%s\\n' {lines} > /data/etc/fulcrum.env", 30)
        run("systemctl restart fulcrum-applyd.service fulcrum-api.service", 300)


def first_admin(vm: Appliance) -> ApiClient:
    api = vm.client()
    assert api.get("/setup") == {"needs_setup": True}, f"{vm.label} is not a fresh appliance"
    api.setup(ADMIN, PASSWORD)
    return api


def configure_network(node: str, api: ApiClient, ntp_server: str) -> dict[str, str]:
    """Every NIC by its MAC: the management one on DHCP, a static address on each segment's NIC;
    the host name and NTP servers. Committed and confirmed. Returns segment -> interface name."""
    interfaces = {i["mac"]: i for i in api.get("/network/interfaces") if i["kind"] == "physical"}
    management = next((i for i in interfaces.values() if GUEST in i["addresses"]), None)
    assert management is not None, f"no NIC of {node} has {GUEST}: {interfaces}"
    nics = {segment: interfaces[tap_mac(node, segment)]["name"] for segment in SEGMENTS}
    document = {
        "hostname": f"fulcrum-{node}",
        "management_interface": management["name"],
        "nics": [
            {"name": management["name"], "mac": management["mac"], "dhcp4": True},
            *(
                {"name": name, "mac": tap_mac(node, segment), "addresses": [f"{node_address(node, segment)}/24"]}
                for segment, name in nics.items()
            ),
        ],
        "ntp_servers": [ntp_server],
    }
    api.put("/network", document)
    revision = api.commit(f"image pair: {node}'s network", expect_state=None, confirm_within=120)
    assert revision["apply_result"]["outcome"] == "applied", revision["apply_result"]
    if revision["state"] == "awaiting_confirm":
        assert api.post(f"/revisions/{revision['number']}/confirm")["state"] == "applied"
    else:
        assert revision["state"] == "applied", revision
    kernel = {i["name"]: i for i in api.get("/network/interfaces")}
    for segment, name in nics.items():
        wanted = f"{node_address(node, segment)}/24"
        assert wanted in kernel[name]["prefixed_addresses"], f"{name} ({segment}) of {node}: {kernel[name]}"
    return nics


def assert_clock_synchronised(node: str, api: ApiClient) -> None:
    def synchronised() -> dict[str, Any] | None:
        clock: dict[str, Any] = api.get("/network/clock")
        return clock if clock["synchronised"] else None

    clock = wait_until(synchronised, CLOCK_SYNC_DEADLINE, what=f"{node}'s clock to synchronise", interval=2)
    assert clock["state"] == "ok", clock


def node_settings(node: str, nics: dict[str, str]) -> dict[str, Any]:
    peer = "b" if node == "a" else "a"
    return {
        "name": f"fulcrum-{node}",
        "vrrp_interface": nics["front"],
        "priority": PRIORITY[node],
        "unicast_source": node_address(node, "front"),
        "peer_address": node_address(peer, "front"),
        "multicast": False,
        "sync_interface": nics["sync"],
        "vip_interfaces": {"gateway": nics["back"]},
        "track_interfaces": [],
    }


def configure_services(api: ApiClient, pair: ImagePair) -> None:
    for name, (vrid, addresses) in VIP_GROUPS.items():
        api.create_vip_group(name=name, virtual_router_id=vrid, addresses=addresses, advert_interval=1)
    backends = [{"address": backend.address} for backend in pair.backends]
    for name, port in (("web", 80), ("echo", ECHO_PORT)):
        api.create_service(name=name, address=FRONT_VIP, ports=[port], scheduler="rr", health_check=CHECK,
                           backends=backends)


def pair_nodes(a: ApiClient, b: ApiClient) -> None:
    """A pairs with a code from B, over the sync link's HTTPS; the first push gives B A's users,
    which ends B's session: log in there again once A sees B in sync."""
    code = b.post("/ha/pairing-code", expect=201)["code"]
    result = a.post("/ha/pair", {"peer_url": f"https://{node_address('b', 'sync')}", "code": code})
    assert result["peer_name"] == "fulcrum-b", result
    wait_until(lambda: a.get("/ha/status")["sync"]["state"] == "in_sync", PAIRING_DEADLINE,
               what="A to see B in sync", interval=2)
    b.login(ADMIN, PASSWORD)
    peer = a.get("/ha/status")["peer"]
    assert peer["certificate"] and peer["untrusted_certificate"] is None, f"A does not pin B's certificate: {peer}"


def wait_for_roles(api: ApiClient, wanted: dict[str, str], what: str, timeout: float = PAIRING_DEADLINE) -> None:
    def settled() -> bool:
        return {g["name"]: g["state"] for g in api.get("/ha/status")["node"]["groups"]} == wanted

    wait_until(settled, timeout, what=what, interval=1)


def assert_standby_holds_connection(vm: Appliance, source: str) -> None:
    """The standby's kernel holds the client's echo connection (read on its console, not the API)."""

    def synced() -> bool:
        with vm.shell() as run:
            table = run("ipvsadm -Lnc", 30)
        return re.search(rf"\s{re.escape(source)}\s", table) is not None

    wait_until(synced, 60, what=f"B's IPVS to hold the synced connection from {source}", interval=2)
