"""SQLAlchemy models. Importing this package registers every table on `Base.metadata`."""

from fulcrum.models.alert import AlertChannel, AlertCondition, AlertRule
from fulcrum.models.audit import AuditEntry
from fulcrum.models.bgp import BgpSettings
from fulcrum.models.event import Event
from fulcrum.models.ha import ClusterMember, FirewallSettings, NodeSettings, VipGroup
from fulcrum.models.login import AccountLoginFailures, AddressLoginFailures
from fulcrum.models.network import NetworkSettings
from fulcrum.models.revision import GOOD_STATES, Revision, RevisionState
from fulcrum.models.service import Backend, Service
from fulcrum.models.user import AuthToken, Role, TokenKind, User

__all__ = [
    "GOOD_STATES",
    "AccountLoginFailures",
    "AddressLoginFailures",
    "AlertChannel",
    "AlertCondition",
    "AlertRule",
    "AuditEntry",
    "AuthToken",
    "Backend",
    "BgpSettings",
    "ClusterMember",
    "Event",
    "FirewallSettings",
    "NetworkSettings",
    "NodeSettings",
    "Revision",
    "RevisionState",
    "Role",
    "Service",
    "TokenKind",
    "User",
    "VipGroup",
]
