"""Every kind of event this node records: the one list the recorders (telemetry, HA, TLS, the
revision service, the storage watch) and the alert rules share, so they cannot drift apart."""

from __future__ import annotations

from typing import Literal, get_args

EventKind = Literal[
    # The data plane (the telemetry hub): health checks, guardrail warnings, VRRP.
    "backend_down",
    "backend_up",
    "backend_warning",
    "backend_warning_cleared",
    "service_down",
    "service_up",
    "vrrp_state",
    # The HA pair (fulcrum.ha.events).
    "ha.paired",
    "ha.unpaired",
    "ha.sync",
    "ha.conflict",
    "ha.split_brain",
    "ha.maintenance",
    "ha.peer_unreachable",
    "ha.peer_reachable",
    "ha.peer_untrusted",
    "ha.peer_certificate",
    "ha.clock_skew",
    "ha.drill",
    "ha.role_unknown",
    "ha.role_known",
    "ha.failback_waiting",
    "ha.failback",
    "ha.upgrade",  # a pair upgrade started, done or stopped (fulcrum.ha.pair_upgrade)
    # A cluster behind BGP ECMP (fulcrum.ha.cluster): a member joined, was drained or removed,
    # stopped or started answering the writer.
    "ha.cluster_member",
    "ha.member_unreachable",
    "ha.member_reachable",
    # The node itself.
    "apply.failed",  # a commit, rollback or replicated revision failed to apply (step and error)
    "revision.confirm_reverted",  # a commit-confirmed revision was not confirmed in time: rolled back
    "disk.filling",  # the data file system passed a usage stage (fulcrum.services.storage)
    "tls.certificate_expiry",  # the served certificate expires soon, or has (fulcrum.tls.expiry)
    "upgrade.result",  # a firmware upgrade's outcome (fulcrum.telemetry.upgrade_watch)
]

ALL_KINDS: tuple[str, ...] = get_args(EventKind)
HA_KINDS = tuple(kind for kind in ALL_KINDS if kind.startswith("ha."))
DATAPLANE_KINDS = tuple(kind for kind in ALL_KINDS if "." not in kind)
