"""What every node must agree on for a service whose VIP this node announces by BGP.

A router spreading a VIP's flows over several nodes by ECMP re-hashes them whenever a node joins or
leaves, so a flow's next packet may reach a node that has never seen it. That node must send it to
the backend the flow started on, with no state shared between the nodes:

- the `mh` scheduler (Maglev hashing) picks the backend from the packet alone, and picks the same
  one on every node given the same list of real servers: IPVS hashes with fixed keys, not a
  per-boot secret (ip_vs_mh.c, generate_hash_secret);
- its table also depends on the *order* of that list (ip_vs_mh_populate fills it round-robin
  over the real servers in the order IPVS holds them), and IPVS appends a real server added back
  to the end: so a real server is never taken out and put back while it exists. A failed check
  leaves it at weight 0 (`on_failure: weight_zero`), a disabled backend is programmed at weight
  0, and real servers are listed in the order they were created, the order in which every node's
  keepalived has appended them (fulcrum.config.snapshot.programmed_backends);
- `scheduler_fallback` then sends the flows hashed to a weight-0 real server to the next one in
  the same table; without it IPVS drops them;
- DR or TUN forwarding: the backend answers the client directly. NAT would need each reply to
  pass back through the node that translated the request, and that node's connection entry:
  the router hashes the backend's reply on its own, and a node that did not translate the request
  has nothing to reverse it with.

Pure rules on one service; the snapshot applies them to every announced service, and the API to
a service or backend as it is written, so the error names the field the client sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fulcrum.config.types import CheckType, FailureAction, Forwarding, Scheduler

if TYPE_CHECKING:
    from fulcrum.config.snapshot import HealthCheck, Service

WHY = "BGP announces this VIP to routers that spread its flows over several nodes"


def service_problem(service: Service) -> tuple[str, str] | None:
    """The first rule `service` breaks as (field, message), or None when every node would send each
    of its flows to the same backend."""
    if service.forwarding not in (Forwarding.DR, Forwarding.TUN):
        return (
            "forwarding",
            f"{WHY}; {service.forwarding.value} forwarding needs each reply to return through the node "
            "that translated the request, and the router may hash it to another node: use dr or tun",
        )
    if service.scheduler != Scheduler.MH:
        return (
            "scheduler",
            f"{WHY}; only mh (Maglev hashing) makes every node pick the same backend for a flow, "
            f"{service.scheduler.value} picks by each node's own state",
        )
    if not service.scheduler_fallback:
        return (
            "scheduler_fallback",
            f"{WHY}; a backend that fails its check stays in the table at weight 0 so that every "
            "node keeps the same table, and without fallback mh drops the flows hashed to it",
        )
    problem = check_problem(service.health_check)
    if problem is not None:
        return f"health_check.{problem[0]}", problem[1]
    for index, backend in enumerate(service.backends):
        problem = check_problem(backend.health_check)
        if problem is not None:
            return f"backends[{index}].health_check.{problem[0]}", problem[1]
    return None


def check_problem(check: HealthCheck | None) -> tuple[str, str] | None:
    """A check that would take a real server out of IPVS: mh's table depends on the order of the
    real servers, and one taken out and added back comes last on that node only."""
    if check is None or check.type == CheckType.NONE or check.on_failure != FailureAction.REMOVE:
        return None
    return (
        "on_failure",
        f"{WHY}; a backend removed on failure comes back at the end of that node's list and changes "
        "its Maglev table, so the nodes would disagree: use weight_zero",
    )
