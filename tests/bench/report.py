"""Turn a benchmark run's JSON (bench-results/<run>/data/*.json) into report.md and PNG plots.

    .venv/bin/python tests/bench/report.py bench-results/<run>

Runs on the host after the VM has finished (matplotlib is not imported in the emulated VM). Every
number comes from the data files; a part without data is listed as missing, with the reason pytest
gave when there is one.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the bench package

from bench.formatting import fmt, pct, pm, rng, table  # noqa: E402
from bench.verdict import verdict  # noqa: E402

PARTS = {
    "schedulers": "1. Scheduler comparison",
    "health": "2. Health-check detection",
    "control_plane": "3. Control plane at size",
    "overhead": "4. Overhead: through the VIP vs straight to the backend",
    "wire": "5. Bytes on the wire vs the physical-limit model",
    "failover": "6. HA failover",
    "bonding": "7. Bonding: round robin against per-flow hashing over links of different delay",
    "ecmp": "8. Scale-out behind ECMP: connections through a node joining, drained and dying",
}
# The seed thesis's Tables 4.1 and 4.2 (002_431b9501ddcad3d3.txt), for the side-by-side.
SEED_NET_IO = {2000: {"rr": 203.2, "wrr": 217.5, "lc": 222.2, "wlc": 184.1, "lblc": 156.8, "lblcr": 183.7,
                      "dh": 152.4, "sh": 247.5, "sed": 155.7, "nq": 219.4},
               8000: {"rr": 176.3, "wrr": 149.1, "lc": 140.7, "wlc": 136.1, "lblc": 102.9, "lblcr": 121.5,
                      "dh": 138.6, "sh": 110.3, "sed": 143.7, "nq": 128.2},
               14000: {"rr": 102.1, "wrr": 104.6, "lc": 130, "wlc": 107.8, "lblc": 72.9, "lblcr": 196.9,
                       "dh": 220.7, "sh": 110.8, "sed": 114.6, "nq": 110.1}}
SEED_RESPONSE = {2000: {"rr": 1038.7, "wrr": 830.5, "lc": 1028.8, "wlc": 826.7, "lblc": 611.4, "lblcr": 1525.7,
                        "dh": 888.8, "sh": 853.1, "sed": 763.6, "nq": 1042.6},
                 8000: {"rr": 793.1, "wrr": 812.2, "lc": 651.8, "wlc": 698.8, "lblc": 577.3, "lblcr": 708.9,
                        "dh": 872.7, "sh": 225.8, "sed": 639.6, "nq": 670.2},
                 14000: {"rr": 983.4, "wrr": 889.6, "lc": 700.9, "wlc": 1025.3, "lblc": 401.4, "lblcr": 1028.7,
                         "dh": 483.5, "sh": 1032.8, "sed": 717.6, "nq": 689.2}}


def load(data: Path, name: str):
    path = data / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def failures(run: Path) -> dict[str, str]:
    """pytest's failure or skip message per benchmark module, from junit.xml."""
    junit = run / "junit.xml"
    found: dict[str, str] = {}
    if not junit.exists():
        return found
    for case in ET.parse(junit).getroot().iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                message = (child.get("message") or child.text or "").strip().splitlines()
                found[f"{case.get('classname')}.{case.get('name')}"] = f"{child.tag}: {message[0][:300] if message else ''}"
    return found


# --- 1 -----------------------------------------------------------------------------------------------


def schedulers(data: dict, run: Path) -> list[str]:
    out: list[str] = []
    knee = data.get("knee") or {}
    out += ["Measured: one NAT service per scheduler (VIP:8100+i -> b1, b2, b3 port 80, health check `none`), "
            "created and committed through Fulcrum's API, one commit per backend profile; httperf (the seed's options: `--hog --num-calls 1 --timeout 5`) "
            "on three client hosts at once, then wrk with a new connection per request; per-backend shares from "
            "IPVS's own connection counters read back over netlink (Fulcrum's `read_ipvs`).", ""]
    if knee.get("ladder"):
        out += ["**Finding the knee** (rr, equal backends; criterion: " + knee.get("criterion", "?") + "):", ""]
        out += table(["offered conn/s", "replies/s", "answered 2xx", "median ms", "p99 ms", "errors", "VM CPU busy",
                      "API process CPU (1 = one CPU)"],
                     [[fmt(s["offered"]), fmt(s["reply_rate"]), f"{s['success']:.1%}", fmt(s["conn_ms_median"], 0),
                       fmt(s["conn_ms_p99"], 0), s["errors"].get("total", 0), pct(s.get("cpu", {}).get("vm_busy")),
                       pct(s.get("cpu", {}).get("api"))] for s in knee["ladder"]])
    if knee.get("knee"):
        rates = knee["rates"]
        out += [f"Knee: **{fmt(knee['knee'])} conn/s** (first failing step: {fmt(knee.get('first_failing'))}). "
                f"Scaling: the seed's 8,000 conn/s maps to the knee, so every seed rate is multiplied by "
                f"{knee['scale']:.4f}: 2,000 / 8,000 / 14,000 -> **{' / '.join(fmt(r) for r in rates)} conn/s** "
                "(0.25x, 1x and 1.75x the knee: below, at and beyond what the lab carries).", ""]
        if knee.get("criterion_met") is False:
            out += ["**Warning:** no rate down to the floor met the criterion (the VM was starved of CPU): the "
                    "lowest rate tried stands in for the knee, so every rate below is beyond what the lab carried.", ""]
    blocks = [b for b in data.get("blocks", []) if b.get("levels")]
    if not blocks:
        return out + ["No scheduler block completed.", ""]
    slow = data.get("slow_backend")
    out += [f"Each cell: mean ± sample standard deviation over {data.get('reps')} repetitions of "
            f"{fmt(data.get('run_seconds'))} s (httperf) or {fmt(data.get('wrk_seconds'))} s (wrk, "
            f"{data.get('wrk_connections')} connections in total). Profiles: **equal** (weights 100:100:100) and "
            + (f"**hetero** (b3 limited to {slow['workers']} requests at a time, {slow['delay_ms']:.0f} ms each: "
               f"{slow['capacity_rps']:.1f} req/s, half of one backend's share of the knee; weights 100:100:50)."
               if slow else "**hetero** (not run)."), ""]
    if slow and slow.get("direct_ms"):
        out += [f"b3 checked before the hetero runs: single requests straight to it took "
                f"{', '.join(fmt(ms, 0) for ms in slow['direct_ms'])} ms (configured {slow['delay_ms']:.0f} ms).", ""]
    if slow and "mechanism" not in slow:
        out += ["**Warning: in this run b3 was not slowed.** It was configured with HAProxy's `tcp-request "
                "inspect-delay` + `accept if WAIT_END`, which does not delay an HTTP-mode frontend (found after the "
                "run; tests/bench/responder.py now holds each request with Lua's `core.msleep`). The hetero rows "
                "below therefore measure weights 100:100:50 on three equal backends, not a slower backend.", ""]
    fd = data.get("fd_unavail_total")
    if fd is not None:
        out += [f"**Client never the bottleneck:** httperf's own `fd-unavail` count summed over all "
                f"{data.get('httperf_runs')} httperf processes: **{fd}** (the seed's runs had 14,607-18,665 per run). "
                "The open-file limit was raised to 1,048,576 and no process was given more connections than "
                "900 of its 1,024 select() slots could hold.", ""]
    for profile in ("equal", "hetero"):
        pblocks = [b for b in blocks if b["profile"] == profile]
        if not pblocks:
            continue
        names = [b["scheduler"] for b in pblocks]
        seed_rates = knee.get("seed_rates", [None] * 3)
        out += [f"### Profile: {profile}", ""]
        out += [f"Table 4.1 (shape of the seed's): throughput, httperf Net I/O [KB/s], profile {profile}", ""]
        rows = []
        for i, rate in enumerate(knee.get("rates", [])):
            label = f"{fmt(rate)} (seed {seed_rates[i]:,})" if seed_rates[i] else fmt(rate)
            rows.append([label] + [pm(b["levels"][i]["summary"]["net_io_kbs"]) if i < len(b["levels"]) else "–"
                                   for b in pblocks])
        out += table(["conn/s"] + names, rows)
        out += [f"Table 4.2 (shape of the seed's): response time, httperf Reply time [ms] (mean), profile {profile}", ""]
        rows = []
        for i, rate in enumerate(knee.get("rates", [])):
            label = f"{fmt(rate)} (seed {seed_rates[i]:,})" if seed_rates[i] else fmt(rate)
            rows.append([label] + [pm(b["levels"][i]["summary"]["reply_ms_mean"]) if i < len(b["levels"]) else "–"
                                   for b in pblocks])
        out += table(["conn/s"] + names, rows)
        for i, rate in enumerate(knee.get("rates", [])):
            out += [f"Detail at {fmt(rate)} conn/s offered, profile {profile} (replies/s and latency: median "
                    "(min–max) over the repetitions; connection time = connect + request + reply, from httperf's "
                    "lifetime histogram):", ""]
            rows = []
            for b in pblocks:
                if i >= len(b["levels"]):
                    continue
                s = b["levels"][i]["summary"]
                rows.append([b["scheduler"], rng(s["reply_rate"]), rng(s["conn_ms_median"], 0), rng(s["conn_ms_p99"], 0),
                             f"{1 - s['success']['mean']:.2%}", s["errors"], s["fd_unavail"],
                             pct((s.get("vm_busy") or {}).get("mean")), pct((s.get("api_cpu") or {}).get("mean"))])
            out += table(["scheduler", "replies/s", "median ms", "p99 ms", "lost", "errors", "fd-unavail",
                          "VM CPU busy", "API CPU"], rows)
        out += [f"wrk (closed loop, new connection per request) and per-backend share of the block's "
                f"connections (IPVS counters), profile {profile}:", ""]
        rows = []
        for b in pblocks:
            w = b.get("wrk_summary", {})
            share = b.get("share", {})
            rows.append([b["scheduler"], pm(w.get("requests_per_s")), pm(w.get("latency_ms_p50"), 0),
                         pm(w.get("latency_ms_p99"), 0), w.get("errors", "–")]
                        + [f"{share[a]['fraction']:.0%}" if a in share else "–" for a in sorted(share or {})])
        addresses = sorted(pblocks[0].get("share", {}))
        out += table(["scheduler", "wrk req/s", "wrk p50 ms", "wrk p99 ms", "wrk errors"]
                     + [f"share {a}" for a in addresses], rows)
        out += scheduler_plots(pblocks, knee, profile, run)
    out += ["### Does \"wrr is best\" hold?", ""] + verdict(blocks, knee) + [""]
    out += ["For comparison, the seed's own Table 4.1 (KB/s) at 2,000 conn/s: "
            + ", ".join(f"{k} {v}" for k, v in SEED_NET_IO[2000].items())
            + "; its clients' fd-unavail errors outnumbered its replies, so those figures measured the client.", ""]
    for scheduler, why in (data.get("skipped") or {}).items():
        out += [f"- {scheduler}: skipped: {why}"]
    return out + [""]


def scheduler_plots(pblocks: list[dict], knee: dict, profile: str, run: Path) -> list[str]:
    names = [b["scheduler"] for b in pblocks]
    rates = knee.get("rates", [])
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
    width = 0.8 / max(1, len(rates))
    for i, rate in enumerate(rates):
        xs = [k + i * width for k in range(len(names))]
        for ax, key in ((axes[0], "reply_rate"), (axes[1], "conn_ms_p99")):
            means, low, high = [], [], []
            for b in pblocks:
                s = b["levels"][i]["summary"][key] if i < len(b["levels"]) else {}
                m = s.get("mean") or 0.0
                means.append(m)
                low.append(m - (s.get("min") or m))
                high.append((s.get("max") or m) - m)
            ax.bar(xs, means, width, yerr=[low, high], capsize=2, label=f"{rate:g} conn/s")
    for ax, title in ((axes[0], "replies/s (bars: mean; whiskers: min–max)"), (axes[1], "p99 connection time [ms]")):
        ax.set_xticks([k + width * (len(rates) - 1) / 2 for k in range(len(names))], names, rotation=45)
        ax.set_title(f"{title}, {profile}")
        ax.legend(fontsize=8)
    axes[1].set_yscale("log")
    fig.tight_layout()
    name = f"schedulers-{profile}.png"
    fig.savefig(run / name, dpi=110)
    plt.close(fig)
    shares = [b.get("share", {}) for b in pblocks]
    addresses = sorted(shares[0]) if shares and shares[0] else []
    if addresses:
        fig, ax = plt.subplots(figsize=(10, 3.5))
        bottom = [0.0] * len(names)
        for address in addresses:
            values = [s.get(address, {}).get("fraction", 0.0) for s in shares]
            ax.bar(names, values, bottom=bottom, label=address)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_title(f"share of connections per backend (IPVS counters), {profile}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(run / f"shares-{profile}.png", dpi=110)
        plt.close(fig)
        return [f"![{profile}]({name})", "", f"![shares {profile}](shares-{profile}.png)", ""]
    return [f"![{profile}]({name})", ""]


# --- 2 -----------------------------------------------------------------------------------------------


def health(data: dict, run: Path) -> list[str]:
    out = ["Measured: time from the failure to the real server's removal from IPVS (/proc/net/ip_vs polled "
           f"every {data['poll_seconds'] * 1000:.0f} ms inside the LB). Six backends, each failing once at a random "
           f"moment within 60 s (seed {data['seed']}); `kill` = both server processes SIGKILLed, `blackhole` = "
           "the host's link set down. Both services watch the same failures.", ""]
    profiles = data["profiles"]
    out += ["Checks: " + "; ".join(f"**{name}**: every {p['interval']:g} s, timeout {p['timeout']:g} s, "
                                   f"{p['retries']} retry after {p['retry_delay']:g} s" for name, p in profiles.items()), ""]
    rows = []
    for name, kinds in data["summary"].items():
        for kind, s in kinds.items():
            missed = sum(1 for e in data["events"] if e["kind"] == kind and e["removed_after"].get(name) is None)
            rows.append([f"{name} defaults", kind, s.get("n", 0), pm(s, 2), rng(s, 2), missed])
    out += table(["check", "failure", "runs", "mean ± sd [s]", "median (min–max) [s]", "not removed in time"], rows)
    out += ["Reference points: keepalived's own defaults ≈ 60 s to detect, HAProxy's ≈ 6 s (issue 7).", ""]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    labels, values = [], []
    for e in data["events"]:
        for name, seconds in e["removed_after"].items():
            if seconds is not None:
                labels.append(f"{name}\n{e['kind']}")
                values.append(seconds)
    cats = sorted(set(labels))
    for k, cat in enumerate(cats):
        ys = [v for lab, v in zip(labels, values, strict=True) if lab == cat]
        ax.scatter([k] * len(ys), ys, zorder=3)
    ax.set_xticks(range(len(cats)), cats)
    ax.set_ylabel("seconds to removal")
    ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("failure -> removal from IPVS (each dot one failure)")
    fig.tight_layout()
    fig.savefig(run / "health.png", dpi=110)
    plt.close(fig)
    return out + ["![health](health.png)", ""]


# --- 3 -----------------------------------------------------------------------------------------------


def _history_bytes(services: int, backends: int) -> int:
    """What the API's statistics history holds in memory for that many services and backends, full."""
    from fulcrum.telemetry.history import memory_bound

    return memory_bound(services, backends)


def _size_goals(data: dict) -> list[str]:
    """Issue 18's table: each goal at 5,000 and 10,000 real servers, every repetition shown."""
    levels = [level for level in data["sizes"] if level["backends"] >= 5000]
    if not levels:
        return []

    def each(values: list) -> str:
        return ", ".join(fmt(v, 2) for v in values) or "–"

    base = data.get("base_real_servers", 0)
    rows = {
        "one-weight change: API call → kernel matched [s]": (
            lambda lv: each([(r["edit_seconds"] + r["kernel_matched_seconds"]) if r["kernel_matched_seconds"] is not None
                             else None for r in lv.get("reloads", [])]), "≤ 2"),
        "full commit → kernel matched (commit returns) [s]": (
            lambda lv: f"{fmt(lv['commit']['kernel_matched_seconds'], 2)} ({fmt(lv['commit']['commit_seconds'], 2)})", "≤ 3"),
        "one API edit (validate) [s]": (lambda lv: each([r["edit_seconds"] for r in lv.get("reloads", [])]), "≤ 0.2"),
        "API RSS measured; with a full day of busy history, at most [MB]": (
            lambda lv: f"{fmt(lv['api_memory_kb'].get('VmRSS', 0) / 1024, 0)}; "
                       f"{fmt((lv['api_memory_kb'].get('VmRSS', 0) * 1024 + _history_bytes(lv['services'], lv['backends'] + base)) / 2**20, 0)}",
            "≤ 200"),
        "commits that waited the read-back's settle time": (
            lambda lv: f"{sum(1 for c in (lv['commit'], *lv.get('reloads', [])) if c.get('warning_count'))} of "
                       f"{1 + len(lv.get('reloads', []))}", "none"),
    }
    header = ["at size, in this run", *(f"{fmt(lv['backends'])} real servers" for lv in levels), "goal"]
    out = ["Issue 18's goals (each repetition shown). \"With a full day of busy history\" adds to the measured "
           "RSS the most the statistics history holds in memory for these services and backends "
           "(`memory_bound`: every series busy for a day, its finished hours on disk), so it is an upper "
           "estimate: the history this run already holds is counted twice.", ""]
    return out + table(header, [[name, *(cell(lv) for lv in levels), goal] for name, (cell, goal) in rows.items()])


def control_plane(data: dict, run: Path) -> list[str]:
    out = ["Measured: `POST /revisions` wall time (returns once the engine has rendered, validated with "
           "`keepalived -t` and `nft -c`, swapped files, reloaded keepalived and read IPVS back until it "
           "matched); independently, when /proc/net/ip_vs held every real server (polled every 50 ms, every 0.5 s "
           "from 500 real servers on); "
           "one change = a PATCH of one backend's weight (the API edit, timed alone), then its commit: the "
           "engine's reload + read-back steps, the commit's wall time, and when /proc/net/ip_vs showed the new "
           "weight (n times, shown per row); memory from /proc/PID/status after them. Backends: health check `none` "
           "(no checker traffic), services of up to "
           f"{data['per_service']} backends.", ""]
    rows = []
    for level in data["sizes"]:
        c = level["commit"]
        ka = level.get("keepalived_memory_kb", {})
        rows.append([fmt(level["backends"]), level["services"], fmt(level["api_edit_seconds"]), fmt(c["commit_seconds"], 2),
                     fmt(c["kernel_matched_seconds"], 2), fmt(c["steps"].get("validate_keepalived"), 2),
                     fmt(c["reload_and_readback_seconds"], 2),
                     f"{pm(level['reload_seconds'], 2)} (n={level['reload_seconds'].get('n', 0)})",
                     pm(level.get("reload_commit_seconds"), 2), pm(level.get("reload_kernel_seconds"), 2),
                     pm(level.get("edit_seconds"), 3),
                     fmt(level["api_memory_kb"].get("VmRSS", 0) / 1024, 0), fmt(level["api_memory_kb"].get("VmHWM", 0) / 1024, 0),
                     fmt(sum(m.get("VmRSS", 0) for m in ka.values()) / 1024, 1),
                     "yes" if level["survived"] else "**no**"])
    out += table(["backends", "services", "building it: API edits [s]", "commit [s]", "kernel matched [s]", "keepalived -t [s]",
                  "reload+read-back [s]", "one change: reload+read-back [s]", "one change: commit [s]",
                  "one change: kernel matched [s]", "one change: API edit [s]",
                  "API RSS [MB]", "API peak [MB]",
                  "keepalived RSS [MB]", "VIP connection survived"], rows)
    if data.get("teardown"):
        t = data["teardown"]
        out += [f"Removing them all again: commit {fmt(t['commit_seconds'], 2)} s, kernel matched after "
                f"{fmt(t['kernel_matched_seconds'], 2)} s.", ""]
    commits = [c for level in data["sizes"] for c in (level["commit"], *level.get("reloads", []))]
    warned = [c for c in commits if c.get("warning_count")]
    if any("warning_count" in c for c in commits):
        out += [f"The read-back waits up to 3 s more (the engine's `readback_settle`) once IPVS matches while real "
                f"servers are down or not yet checked: {len(warned)} of {len(commits)} commits here reported such"
                + (f", e.g. \"{warned[0]['warnings'][0]}\"" if warned and warned[0].get("warnings") else "") + ".", ""]
    out += _size_goals(data)
    if data["sizes"]:
        largest = data["sizes"][-1]
        history = _history_bytes(largest["services"], largest["backends"] + data.get("base_real_servers", 0))
        out += [f"The API's memory grows with the statistics history it keeps for every service and backend, "
                f"bounded by design (api/src/fulcrum/telemetry/history.py): for these {largest['services']} services "
                f"and the {fmt(largest['backends'] + data.get('base_real_servers', 0))} real servers in IPVS then, "
                f"at most {history / 2**20:.0f} MB in memory once a day of busy history is kept, its finished hours "
                "on disk (a bound, not measured here; this run keeps minutes of history, and its RSS above is "
                "measured).", ""]
    out += ["Reference: " + data.get("reference", "") + ".", ""]
    sizes = [level["backends"] for level in data["sizes"]]
    if sizes:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4))
        axes[0].plot(sizes, [level["commit"]["commit_seconds"] for level in data["sizes"]], "o-", label="commit (API)")
        axes[0].plot(sizes, [level["commit"]["kernel_matched_seconds"] or 0 for level in data["sizes"]], "s--",
                     label="kernel matched")
        axes[0].errorbar(sizes, [level["reload_seconds"].get("mean", 0) for level in data["sizes"]],
                         yerr=[level["reload_seconds"].get("stdev", 0) for level in data["sizes"]], fmt="^:",
                         label="reload + read-back, one change")
        axes[1].plot(sizes, [level["api_memory_kb"].get("VmRSS", 0) / 1024 for level in data["sizes"]], "o-", label="API RSS")
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xlabel("backends")
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("seconds")
        axes[1].set_ylabel("MB")
        fig.tight_layout()
        fig.savefig(run / "control-plane.png", dpi=110)
        plt.close(fig)
        out += ["![control plane](control-plane.png)", ""]
    return out


# --- 4 -----------------------------------------------------------------------------------------------


def overhead(data: dict, run: Path) -> list[str]:
    out = [f"Measured: wrk from c1, {data['connections']} connections, {fmt(data['seconds'])} s per run, "
           f"{data['reps']} runs per target, targets interleaved; each service has one backend, so the ratio "
           "is the cost of the extra hop. Baselines: d1 straight on the same segment (for DR, TUN, one-arm); b1 "
           "routed by the LB without IPVS (for NAT and HAProxy, since b1 sits behind the LB).", ""]
    for mode, summary in data.get("summary", {}).items():
        out += [f"**{'keep-alive' if mode == 'keepalive' else 'new connection per request'}**", ""]
        rows = []
        for target, s in summary.items():
            rows.append([target, pm(s["requests_per_s"]), pm(s["latency_ms_p50"], 2), pm(s["latency_ms_p99"], 1),
                         s["errors"], s.get("vs", ""), fmt(s.get("rps_ratio"), 3), fmt(s.get("p50_ratio"), 3)])
        out += table(["target", "req/s", "p50 ms", "p99 ms", "errors", "baseline", "req/s ratio", "p50 ratio"], rows)
        h = summary.get("haproxy", {})
        out += [f"HAProxy (TCP mode) vs IPVS NAT on the same path: req/s ratio {fmt(h.get('rps_vs_ipvs_nat'), 3)}, "
                f"p50 latency ratio {fmt(h.get('p50_vs_ipvs_nat'), 3)}.", ""]
    if data.get("summary"):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4))
        for k, (mode, summary) in enumerate(data["summary"].items()):
            names = list(summary)
            axes[k].bar(names, [summary[n]["requests_per_s"].get("mean", 0) for n in names],
                        yerr=[summary[n]["requests_per_s"].get("stdev", 0) for n in names], capsize=3)
            axes[k].set_title(f"req/s, {mode}")
            axes[k].tick_params(axis="x", rotation=45)
        fig.tight_layout()
        fig.savefig(run / "overhead.png", dpi=110)
        plt.close(fig)
        out += ["![overhead](overhead.png)", ""]
    out += ["Reference: IPVS forwards ~1.2 Mpps per core on real hardware (issue 7); this lab's emulated "
            "CPUs are orders of magnitude slower, and client, LB and backends share them.", ""]
    return out


# --- 5 -----------------------------------------------------------------------------------------------


def wire(data: dict, run: Path) -> list[str]:
    seed = data["seed"]
    summary = data.get("summary", {})
    model = summary.get("seed_model", {})
    out = [f"Measured: interface counters (/proc/net/dev in each namespace) around wrk runs with ~100 requests per "
           f"connection, {data['connections']} connections, {fmt(data['seconds'])} s, {data['reps']} runs per "
           f"service; per request = counter delta / wrk's completed requests. Response body here: "
           f"{data['body_bytes']} B. Counters exclude the {data['framing_bytes_per_frame']} B of preamble, FCS "
           "and inter-frame gap per frame, which the ceilings add back.", ""]
    rows = []
    for target in ("nat", "dr", "one-arm"):
        s = summary.get(target)
        if not s:
            continue
        rows.append([target, pm(s["client_request_bytes"]), fmt(seed["request"], 2), pm(s["client_response_bytes"]),
                     fmt(s["response_minus_body"]), fmt(seed["response_overhead"], 2),
                     f"{s['client_request_frames']:.2f} / {s['client_response_frames']:.2f}"])
    out += table(["service", "request B (client tx)", "seed model", "response B (client rx)", "response - body",
                  "seed model", "frames req / resp"], rows)
    rows = []
    for target in ("nat", "dr", "one-arm"):
        s = summary.get(target)
        if not s:
            continue
        rows.append([target, s["lb_busiest"], fmt(s["lb_busiest_wire_bytes"]), fmt(s["ceilings"]["1 Gb/s"], 0),
                     fmt(s["ceilings"]["10 Gb/s"], 0), pm(s["requests_per_s"])])
    out += ["Implied ceiling: the LB's busiest NIC direction per request (bytes + framing), and the request rate "
            "a full-duplex link of that speed allows:", ""]
    out += table(["service", "busiest LB NIC direction", "wire B/request", "ceiling at 1 Gb/s", "ceiling at 10 Gb/s",
                  "measured req/s here"], rows)
    if model:
        ceilings = model["seed_ceilings_own_formula"]
        out += [f"The seed's model with this body: {fmt(model['bytes_per_request'], 2)} B per request "
                f"(227.68 + 437.68 + {data['body_bytes']}); the seed's own ceiling formula (1 Gb/s / "
                f"(622.72 B + body)) gives {fmt(ceilings['1 Gb/s'], 0)} req/s at 1 Gb/s and "
                f"{fmt(ceilings['10 Gb/s'], 0)} at 10 Gb/s (its stated figure: {seed['ceiling_1g']:,} req/s for a "
                "13 B body). Note the seed's two numbers disagree: 227.68 + 437.68 = 665.36 B, not 622.72 B.", ""]
    return out


# --- 7 -----------------------------------------------------------------------------------------------


def bonding(data: dict, run: Path) -> list[str]:
    delay = data["delays_ms"][-1]
    out = [f"Measured: two namespaces joined by two veth links bonded in each mode (hashing modes: layer3+4), "
           f"netem on the second link in both directions with 0 ms or {delay} ms; iperf3 ({data['iperf3']}), "
           f"{data['flows']} parallel TCP flows for {fmt(data['seconds'])} s after one omitted second; "
           f"{data['rounds']} rounds, each round every mode at both delays. Throughput is iperf3's received "
           "rate; counters are TCP's own (nstat names) read around each run, the receiver's out-of-order queue "
           "and the sender's reordering and retransmission counters. Cells: median (min–max).", "",
           "**The seed's claim:** " + data["seed_claim"], ""]
    summary = data.get("summary", {})
    rows = []
    for key, s in summary.get("by_mode", {}).items():
        rows.append([key, rng(s["mbit_per_s"]), rng(s["slow_link_share"], 2), rng(s["TcpExtTCPOFOQueue"], 0),
                     rng(s["TcpExtTCPSACKReorder"], 0), rng(s["TcpExtTCPTSReorder"], 0),
                     rng(s["TcpRetransSegs"], 0), rng(s["TcpExtTCPDSACKRecv"], 0)])
    out += table(["mode, delay on link 2", "Mbit/s", "share of bytes on link 2", "TCPOFOQueue (rx)",
                  "TCPSACKReorder (tx)", "TCPTSReorder (tx)", "RetransSegs (tx)", "TCPDSACKRecv (tx)"], rows)
    out += ["Ratios of throughput within one round (median (min–max) over the rounds):", ""]
    out += table(["ratio", "value"], [[name, rng(s, 3)] for name, s in summary.get("ratios", {}).items()])
    out += ["How to read it: the seed's collapse shows as a small `balance-rr: "
            f"{delay} ms / 0 ms` ratio beside many out-of-order segments and retransmissions; a hashing mode "
            "keeps each flow on one link, so its flows are not reordered. The rates are an emulated VM's "
            "(sender and receiver share its CPUs): compare the ratios, not the Mbit/s, with the seed's 10GE.", ""]
    return out


def ecmp(data: dict, run: Path) -> list[str]:
    summary = data["summary"]
    out = [f"Measured: tests/lab/ecmp.py's cluster (a router with FRR and L4 ECMP hashing, three nodes with FRR "
           f"and keepalived from Fulcrum's renderers, three DR backends); {data['rounds']} rounds, each: "
           f"{data['held']} held connections through lb1 and lb2, lb3 joins and is drained, with mh (Fulcrum's "
           f"rule for an announced VIP) and with wrr (the control); then {data['killed_held']} connections over "
           f"all three and lb3's link down; then {data.get('removal_held', '?')} connections over all three and "
           f"backend b3 removed from every node's configuration; then {data.get('sick_held', '?')} connections "
           "over all three and lb2's keepalived stopped, no apply following, every connection sending at once, "
           "with the nodes' announced_unbalanced drop and without it (the control). Shares are of the held connections. "
           "Cells: median (min–max).", "",
           *(f"**{name}:** {text}." for name, text in data["anchors"].items()), ""]
    rows = []
    for scheduler in ("mh", "wrr"):
        s = summary[scheduler]
        rows.append([scheduler, rng(s["moved share"], 2), rng(s.get("changed-node share"), 2),
                     rng(s["survived the join"], 3), rng(s["survived the drain"], 3),
                     rng(s["lb3's share of new connections"], 2)])
    out += table(["scheduler", "moved to lb3 at the join", "changed node at the join (any)", "survived the join",
                  "survived the drain", "lb3's share of new connections"], rows)
    kill = summary["kill"]
    out += table(["a node dies (link down)", "value"],
                 [["seconds from its link down to the router's route change (BFD: the router's 300 ms x the node's 3)",
                   rng(kill["withdrawal seconds"], 3)],
                  ["share of connections it carried", rng(kill["carried share"], 2)],
                  ["share of all connections that survived", rng(kill["survived"], 3)]])
    if "remove" in summary:  # runs before backend removal was measured have no such rounds
        removal = summary["remove"]
        out += table(["a backend removed (from every node)", "value"],
                     [["share of held connections it served", rng(removal["share on the removed backend"], 2)],
                      ["share of the others' connections that survived", rng(removal["survived on the others"], 3)],
                      ["its own connections that survived (they end at their next packet)",
                       rng(removal["survived on the removed backend"], 0)],
                      [f"new connections sent to it afterwards (of {data.get('new_connections', '?')})",
                       rng(removal["new connections to the removed backend"], 0)]])
    if "sick" in summary:
        sick, control = summary["sick"], summary.get("sick without the drop")
        rows = [["seconds from keepalived's exit to the router's route change", rng(sick["withdrawal seconds"], 2)],
                ["seconds from keepalived's start to its next hop back", rng(sick["announce seconds"], 2)],
                ["share of connections the node carried", rng(sick["carried share"], 2)],
                ["share of all connections that survived", rng(sick["survived"], 3)]]
        if "survived of the node's" in sick:
            rows.append(["share of the node's connections that survived", rng(sick["survived of the node's"], 3)])
        if control and "survived of the node's" in control:
            rows.append(["the same without the announced_unbalanced drop (control): the node's that survived",
                         rng(control["survived of the node's"], 3)])
        out += table(["a node's keepalived stops, every connection sending at once (the announcement watch withdraws it)",
                      "value"], rows)
    out += ["How to read it: the control's loss at the join is GLB's third; with mh every node sends a moved "
            "flow to the backend it already has, so the join and the drain lose nothing. 'Changed node' counts "
            "every flow a node saw that it had not seen before: Linux's hash-threshold multipath also moves flows "
            "between the two old nodes when a third comes, so it exceeds 'moved to lb3'. The times are an "
            "emulated VM's, stamped by `ip -ts monitor` in both namespaces as the events were read.", ""]
    return out


# --- the report ----------------------------------------------------------------------------------------


def conditions(data: Path) -> list[str]:
    c = load(data, "conditions") or {}
    wall = load(data, "wall") or {}
    host = load(data, "host") or {}
    out = ["## Conditions", ""]
    rows = [
        ["kernel (VM)", c.get("kernel", "?")],
        ["CPUs (VM)", f"{c.get('cpus', '?')} × {c.get('cpu_model', '?')}"],
        ["emulation", "qemu without KVM (TCG software emulation), virtme-ng, root file system over 9p"
         + (" (guest sees a hypervisor)" if c.get("guest_sees_hypervisor") else "")],
        ["memory (VM)", f"{c.get('memory_mb', '?')} MB"],
        ["host", host.get("cpu", "?") + (f", load average at start {host['load_start']}" if host.get("load_start") else "")
         + (f", at end {host['load_end']}" if host.get("load_end") else "")],
        ["tools", "; ".join(f"{k}: {v}" for k, v in (c.get("tools") or {}).items())],
        ["duration scale", f"{c.get('scale', 1)} (--bench-scale; 1 = the stated budget)"],
        ["API start-up in the VM", f"{c.get('api_start_seconds', '?')} s"],
        ["API settings changed", ", ".join(f"{k}={v}" for k, v in (c.get("api_settings") or {}).items())
         + " (the statistics poll every 10 s instead of the default 1 s, whose pyroute2 dump competes for the "
           "emulated CPUs with the data plane being measured; the read-back deadline raised so that large commits "
           "are measured, not rolled back; see tests/bench/benchlab.py)"],
        ["wall time of the VM run", f"{wall.get('seconds', '?')} s"],
    ]
    return out + table(["", ""], rows)


def render(run: Path) -> Path:
    data = run / "data"
    out = [f"# Fulcrum benchmarks: {run.name}", "",
           "Produced by `make bench` (tests/bench/README.md). Every figure below is read from this run's "
           "data/*.json; nothing is typed in.", ""]
    out += conditions(data)
    why = failures(run)
    renderers = {"schedulers": schedulers, "health": health, "control_plane": control_plane,
                 "overhead": overhead, "wire": wire, "bonding": bonding, "ecmp": ecmp}
    missing = []
    for name, title in PARTS.items():
        out += [f"## {title}", ""]
        if name == "failover":
            md = data / "failover.md"
            if md.exists():
                out += [md.read_text().strip().removeprefix("## HA failover in the VM lab").strip(), "",
                        "Reference points: keepalived's default takeover (1 s adverts) ≈ 3.5-3.6 s; Kemp's HA "
                        "timeout 3-15 s (issue 7).", ""]
            else:
                out += ["Not measured in this run (left out with `FULCRUM_BENCH_FAILOVER=0`, or it did not "
                        "finish: see pytest.log).", ""]
                missing.append(name)
            continue
        part = load(data, name)
        if part is None:
            reasons = [f"{test}: {message}" for test, message in why.items() if name.split("_")[0] in test]
            out += ["No data." + (" " + "; ".join(reasons) if reasons else ""), ""]
            missing.append(name)
            continue
        try:
            out += renderers[name](part, run)
        except (KeyError, TypeError, ValueError) as error:  # a part cut short: say so, keep the rest
            out += [f"Incomplete data ({type(error).__name__}: {error}); see data/{name}.json.", ""]
        problems = [f"- {test}: {message}" for test, message in why.items() if name.split("_")[0] in test]
        if problems:
            out += ["Problems reported by the run:", "", *problems, ""]
    if missing:
        out += ["## Missing", "", *(f"- {PARTS[name]}" for name in missing), ""]
    report = run / "report.md"
    report.write_text("\n".join(out))
    return report


if __name__ == "__main__":
    print(render(Path(sys.argv[1]).resolve()))
