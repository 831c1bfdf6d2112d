"""Every cluster node's BGP as its own FRR runs it, for the Cluster page (GET /cluster/bgp).

Asked only while somebody looks: the watcher's round polls members every second or two, and a
node's BGP view is a round trip through its apply helper to bgpd and bfdd, too costly to add to
every poll. The writer asks each member (signed GET /peer/bgp) side by side, with its own view; a
member asks the writer for that whole picture (GET /peer/cluster/bgp), as it does for the
cluster's picture. A node that cannot be asked is listed with the reason, never left out.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pydantic import ValidationError
from sqlalchemy.orm import Session

from fulcrum.apply.client import Applier
from fulcrum.apply.result import BgpView
from fulcrum.errors import Unavailable
from fulcrum.ha.cluster import ask_writer, client_for, is_member, members
from fulcrum.ha.peer_client import PeerError
from fulcrum.models.ha import ClusterMember, HaPairing
from fulcrum.schemas.cluster import ClusterBgp, NodeBgp
from fulcrum.services import bgp
from fulcrum.services.ha_config import get_node

# A member's view is its helper asking bgpd and bfdd: seconds on a slow box, well under this.
BGP_TIMEOUT = 10.0


def picture(session: Session, applier: Applier) -> ClusterBgp:
    """This node's view, and every other node's where this node is in a cluster."""
    here = get_node(session).name
    pairing = session.get(HaPairing, 1)
    if is_member(pairing):
        assert pairing is not None
        return _from_writer(pairing, here)
    rows = members(session)
    nodes = [_local(here, applier)]
    if rows:
        with ThreadPoolExecutor(max_workers=len(rows), thread_name_prefix="cluster-bgp") as pool:
            nodes += pool.map(lambda row: _ask_member(row, here), rows)
    return ClusterBgp(nodes=nodes, message="")


def _local(name: str, applier: Applier) -> NodeBgp:
    try:
        return NodeBgp(name=name, local=True, bgp=bgp.live_view(applier), error="")
    except Unavailable as error:
        return NodeBgp(name=name, local=True, bgp=None, error=str(error))


def _ask_member(row: ClusterMember, here: str) -> NodeBgp:
    try:
        response = client_for(row, here).get("/bgp", timeout=BGP_TIMEOUT)
        if not response.ok:
            raise PeerError(f"it answered with {response.detail}")
        return NodeBgp(name=row.name, local=False, bgp=BgpView.model_validate(response.data), error="")
    except (PeerError, ValidationError) as error:
        return NodeBgp(name=row.name, local=False, bgp=None, error=f"could not be asked: {error}")


def _from_writer(pairing: HaPairing, here: str) -> ClusterBgp:
    try:
        # The writer asks every member, this one too: its own answer waits on the slowest of them.
        answer = ask_writer(pairing, here, "/cluster/bgp", ClusterBgp, 2 * BGP_TIMEOUT)
    except (PeerError, ValidationError) as error:
        return ClusterBgp(
            nodes=[],
            message=f"the writer {pairing.peer_name} could not be asked for the cluster's BGP: {error}",
        )
    for node in answer.nodes:
        node.local = node.name == here
    return answer
