"""Part 4: bytes per request on the wire, set against the seed's physical-limit model.

The seed (000_e4a208bd96da9b9f.txt) counted with tcpdump, for wrk sending 100 requests per
connection through IPVS: 227.68 B of request data and (body + 437.68) B of response data per
request, and from "622.72 B of extra headers and framing per request" a ceiling of 196,627 req/s at
1 Gb/s for a 13-byte body.

Here wrk runs the same pattern (keep-alive, every connection closed after about 100 requests, by a
small Lua script) through the NAT, DR and one-arm services, and the interface counters
(/proc/net/dev, per namespace) of the client, the LB and the backend are read before and after.
Counters see Ethernet frames without preamble, FCS and inter-frame gap (what tcpdump shows); the
ceilings add those 24 B per frame, as a real link carries them.
"""

from __future__ import annotations

import pytest

from bench import benchlab, clients, results
from bench.results import spread
from lab.netns import proc_net

pytestmark = [pytest.mark.kernel, pytest.mark.bench_part("wire"), pytest.mark.timeout(1200)]

REPS = 3
SECONDS = 5
CONNECTIONS = 8
FRAMING = 24  # preamble + SFD 8, FCS 4, inter-frame gap 12: on the wire, not in the counters
SEED = {"request": 227.68, "response_overhead": 437.68, "overhead_per_request": 622.72, "body": 13,
        "ceiling_1g": 196_627}
LINKS = {"1 Gb/s": 1e9, "10 Gb/s": 10e9}

CLOSE_EVERY_100 = """\
-- Close each connection after about 100 requests, like the seed's wrk runs.
local n = 0
request = function()
  n = n + 1
  if n % 100 == 0 then
    return wrk.format(nil, nil, {["Host"] = wrk.host, ["Connection"] = "close"})
  end
  return wrk.format(nil, nil, {["Host"] = wrk.host})
end
"""


def counters(host) -> dict[str, dict[str, int]]:
    """{interface: {rx_bytes, rx_packets, tx_bytes, tx_packets}} from the host's /proc/net/dev."""
    found = {}
    for line in proc_net(host, "dev").splitlines()[2:]:
        name, _, fields = line.partition(":")
        values = [int(v) for v in fields.split()]
        found[name.strip()] = {"rx_bytes": values[0], "rx_packets": values[1],
                               "tx_bytes": values[8], "tx_packets": values[9]}
    return found


def per_request(before: dict, after: dict, requests: int) -> dict:
    return {iface: {key: (after[iface][key] - before[iface][key]) / requests for key in after[iface]}
            for iface in after if iface != "lo"}


def test_bytes_per_request(env):
    targets = benchlab.one_backend_services(env)
    client = env.clients[0]
    script = client.workdir / "close-every-100.lua"
    script.write_text(CLOSE_EVERY_100)
    watched = {"client": client, "lb": env.lb, "b1": env.nat[0], "d1": env.direct[0]}
    body = len(env.nat[0].role)  # the responder answers with the host's role
    data = {"seed": SEED, "framing_bytes_per_frame": FRAMING, "body_bytes": body, "reps": REPS,
            "seconds": env.seconds(SECONDS), "connections": CONNECTIONS, "runs": {}}
    for target in ("nat", "dr", "one-arm"):
        address, port = targets[target]
        data["runs"][target] = []
        for _ in range(REPS):
            before = {name: counters(host) for name, host in watched.items()}
            argv = clients.wrk_argv(f"http://{address}:{port}/", connections=CONNECTIONS,
                                    seconds=env.seconds(SECONDS), script=str(script))
            (run,) = clients.run_parallel([clients.Run(client, argv)], timeout=env.seconds(SECONDS) + 120)
            after = {name: counters(host) for name, host in watched.items()}
            wrk = clients.parse_wrk(run.stdout, client=client.role, connections=CONNECTIONS)
            assert wrk.requests > 0, run.stdout
            data["runs"][target].append({
                "requests": wrk.requests, "requests_per_s": wrk.requests_per_s,
                "per_request": {name: per_request(before[name], after[name], wrk.requests) for name in watched},
            })
        results.save(env.out, "wire", data)
    data["summary"] = summarize(data)
    results.save(env.out, "wire", data)


def summarize(data: dict) -> dict:
    """Per target: the client's bytes per request each way, the LB's busiest NIC direction, and
    the request rate that direction allows at 1 and 10 Gb/s."""
    summary = {}
    for target, runs in data["runs"].items():
        def each(host: str, iface: str, key: str) -> dict:
            return spread([r["per_request"][host][iface][key] for r in runs])

        request = each("client", "eth0", "tx_bytes")
        response = each("client", "eth0", "rx_bytes")
        lb = {f"{iface} {way}": {"bytes": each("lb", iface, f"{way}_bytes")["mean"],
                                 "frames": each("lb", iface, f"{way}_packets")["mean"]}
              for iface in ("eth0", "eth1") for way in ("rx", "tx")}
        busiest_name, busiest = max(lb.items(), key=lambda item: item[1]["bytes"] + FRAMING * item[1]["frames"])
        wire = busiest["bytes"] + FRAMING * busiest["frames"]
        summary[target] = {
            "client_request_bytes": request,
            "client_response_bytes": response,
            "client_request_frames": each("client", "eth0", "tx_packets")["mean"],
            "client_response_frames": each("client", "eth0", "rx_packets")["mean"],
            "response_minus_body": response["mean"] - data["body_bytes"],
            "lb": lb,
            "lb_busiest": busiest_name,
            "lb_busiest_wire_bytes": wire,
            "ceilings": {link: bits / 8 / wire for link, bits in LINKS.items()},
            "requests_per_s": spread([r["requests_per_s"] for r in runs]),
        }
    body = data["body_bytes"]
    seed = data["seed"]
    summary["seed_model"] = {
        "bytes_per_request": seed["request"] + seed["response_overhead"] + body,
        "seed_ceilings_own_formula": {link: bits / 8 / (seed["overhead_per_request"] + body)
                                      for link, bits in LINKS.items()},
    }
    return summary
