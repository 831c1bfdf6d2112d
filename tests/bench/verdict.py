"""Does the seed thesis's "wrr is best" hold? Judged from a run's scheduler blocks, per backend
profile and offered rate, with the repetitions' spread deciding what counts as a difference."""

from __future__ import annotations

from bench.formatting import fmt

CONCENTRATED = 0.8  # a scheduler that sends this share of a block's connections to one backend
# Replies/s this close to the leader's mean count as level with it: at the lower rates every
# scheduler delivers what is offered, and a 2 s run's count resolves about 0.5 %.
LEVEL = 0.01
# Why a scheduler may put most connections on one backend in this lab (one VIP, three clients).
WHY_ONE_BACKEND = {
    "dh": "hashes the destination address, and the lab has one VIP",
    "sh": "hashes the client address, and the lab has three clients",
    "mh": "hashes the client address (Maglev), and the lab has three clients",
    "fo": "sends everything to the highest-weight server that is not overloaded",
    "ovf": "fills the highest-weight server up to its weight, read as a connection limit",
    "lblc": "keeps a destination address on one server until that server is overloaded",
    "lblcr": "keeps a destination address on a set of servers that grows only under overload",
}


def _judge(cells: dict[str, dict]) -> tuple[str, list[str], str | None, str]:
    """The leader by replies/s, the schedulers that cannot be told apart from it (their best
    repetition reaches the leader's worst, or 99 % of its mean), the lowest p99 among them, and
    wrr's standing."""
    leader = max(cells, key=lambda n: cells[n]["reply_rate"]["mean"])
    floor = min(cells[leader]["reply_rate"]["min"], (1 - LEVEL) * cells[leader]["reply_rate"]["mean"])
    top = sorted(n for n, s in cells.items() if s["reply_rate"]["max"] >= floor)
    p99 = {n: cells[n]["conn_ms_p99"].get("mean") for n in top if cells[n]["conn_ms_p99"].get("n")}
    fastest = min(p99, key=p99.get) if p99 else None
    wrr = cells["wrr"]
    # wrr wins outright only if it alone tops replies/s, or its worst p99 beats every other top
    # scheduler's best: overlapping spreads are a tie, whatever the means say.
    others = [cells[n]["conn_ms_p99"] for n in top if n != "wrr" and cells[n]["conn_ms_p99"].get("n")]
    clear_p99 = wrr["conn_ms_p99"].get("n") and all(wrr["conn_ms_p99"]["max"] < o["min"] for o in others)
    if top == ["wrr"] or ("wrr" in top and clear_p99):
        return leader, top, fastest, "holds"
    return leader, top, fastest, "tied" if "wrr" in top else "fails"


STATUS_TEXT = {"holds": "holds", "does not hold": "does not hold",
               "tied": "tie: wrr cannot be told apart from the others in the top group (replies/s within the "
                       "leader's spread, p99 ranges overlapping or worse)",
               "fails": "does not hold"}


def verdict(blocks: list[dict], knee: dict) -> list[str]:
    """Per profile and rate: the top group by replies/s and where wrr stands, once over every
    scheduler and once over those that spread the load (no backend given CONCENTRATED or more of
    the block's connections). Then a count over all conditions."""
    lines, crowd = [], []
    tally: dict[str, dict[str, list[str]]] = {"all": {"holds": [], "tied": [], "fails": []},
                                              "spread": {"holds": [], "tied": [], "fails": []}}
    concentrated: dict[str, list[str]] = {}  # scheduler -> "profile: share to address"
    for profile in ("equal", "hetero"):
        pblocks = [b for b in blocks if b["profile"] == profile]
        heavy = {}
        for b in pblocks:
            shares = {a: v.get("fraction", 0.0) for a, v in b.get("share", {}).items()}
            if shares and max(shares.values()) >= CONCENTRATED:
                address = max(shares, key=shares.get)
                heavy[b["scheduler"]] = f"{shares[address]:.0%} to {address}"
                concentrated.setdefault(b["scheduler"], []).append(f"{profile}: {heavy[b['scheduler']]}")
        for i, rate in enumerate(knee.get("rates", [])):
            cells = {b["scheduler"]: b["levels"][i]["summary"] for b in pblocks if i < len(b["levels"])}
            cells = {name: s for name, s in cells.items() if s["reply_rate"].get("n")}
            if "wrr" not in cells:
                continue
            condition = f"{profile} at {fmt(rate)} conn/s"
            leader, top, fastest, status = _judge(cells)
            tally["all"][status].append(condition)
            crowd.append((len(top), len(cells)))
            line = (f"- {condition}: top by replies/s ({leader} {cells[leader]['reply_rate']['mean']:.1f}/s, and those "
                    f"within its spread or 1 %): {', '.join(top)}; lowest p99 among them: {fastest} "
                    f"({fmt(cells[fastest]['conn_ms_p99'].get('mean') if fastest else None, 0)} ms); wrr "
                    f"{cells['wrr']['reply_rate']['mean']:.1f}/s, p99 {fmt(cells['wrr']['conn_ms_p99'].get('mean'), 0)} ms: "
                    f"**{STATUS_TEXT[status]}**.")
            spreading = {n: c for n, c in cells.items() if n not in heavy}
            if heavy and "wrr" in spreading:
                s_leader, s_top, s_fastest, s_status = _judge(spreading)
                tally["spread"][s_status].append(condition)
                line += (f" Among the schedulers that spread the load ({len(spreading)} of {len(cells)}): top "
                         f"{', '.join(s_top)}, lowest p99 {s_fastest}; wrr **{STATUS_TEXT[s_status].split(':')[0]}**.")
            lines.append(line)
    total = sum(len(v) for v in tally["all"].values())
    if not total:
        return ["No data to judge."]

    def counted(kind: str) -> str:
        t = tally[kind]
        return (f"holds in {len(t['holds'])} of {sum(len(v) for v in t.values())} conditions"
                + (f" ({'; '.join(t['holds'])})" if t["holds"] else "")
                + f", is a tie in {len(t['tied'])}" + (f" ({'; '.join(t['tied'])})" if t["tied"] else "")
                + f" and does not hold in {len(t['fails'])}" + (f" ({'; '.join(t['fails'])})" if t["fails"] else ""))

    lines += ["", f"**Conclusion:** \"wrr is best\" {counted('all')}. The top group (schedulers whose replies/s "
              f"cannot be told apart from the leader's) had {min(c[0] for c in crowd)} to {max(c[0] for c in crowd)} "
              f"members of the {max(c[1] for c in crowd)} schedulers measured per condition: differences smaller than "
              "the repetitions' spread are not results, which is what the seed's single runs could not show."]
    if concentrated:
        lines += ["", f"**Read the overload rows with care.** Some schedulers sent {CONCENTRATED:.0%} or more of a "
                  "block's connections to one backend: "
                  + "; ".join(f"{name} ({', '.join(where)}; it {WHY_ONE_BACKEND.get(name, 'did so')})"
                              for name, where in sorted(concentrated.items()))
                  + ". In this lab the three backends share the VM's two emulated CPUs with the LB and the clients, "
                  "so one busy backend costs less than three, and such schedulers top the rows beyond the knee; on "
                  "separate servers that one backend would be the bottleneck. Among the schedulers that spread the "
                  f"load, \"wrr is best\" {counted('spread')}."]
    return lines
