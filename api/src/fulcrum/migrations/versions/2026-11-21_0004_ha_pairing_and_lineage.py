"""HA pairing and revision lineage

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21

The pairing with the peer node (peer, pair key) and the one-time pairing code; on revisions, the
hash of the shared part of the configuration, its parent's, and the lineage id that replication
compares. Existing revisions get theirs computed from their snapshots, in order.
"""

import hashlib
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As fulcrum.services.lineage (then fulcrum.ha.lineage) computes them in this release; kept here so
# the migration never changes.
_SHARED_KEYS = ("format", "services", "vip_groups", "firewall")
_HEAD_STATES = ("applied", "validated")


def _shared_hash(snapshot_json: str) -> str:
    data = json.loads(snapshot_json)
    shared = {key: data.get(key) for key in _SHARED_KEYS}
    return hashlib.sha256(json.dumps(shared, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def upgrade() -> None:
    op.create_table(
        "ha_pairing",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("peer_name", sa.String(length=63), nullable=False),
        sa.Column("peer_url", sa.String(length=255), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("paired_at", sa.DateTime(), nullable=False),
        sa.Column("initiator", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ha_pairing")),
    )
    op.create_table(
        "ha_pairing_code",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ha_pairing_code")),
    )
    with op.batch_alter_table("revisions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("shared_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("parent_shared_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("lineage", sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f("ix_revisions_lineage"), ["lineage"], unique=False)

    connection = op.get_bind()
    revisions = sa.table(
        "revisions",
        sa.column("number", sa.Integer),
        sa.column("snapshot", sa.Text),
        sa.column("state", sa.String),
        sa.column("shared_hash", sa.String),
        sa.column("parent_shared_hash", sa.String),
        sa.column("lineage", sa.String),
    )
    head: tuple[str, str] | None = None  # (shared hash, lineage) of the newest good revision so far
    rows = connection.execute(
        sa.select(revisions.c.number, revisions.c.snapshot, revisions.c.state).order_by(revisions.c.number)
    )
    for number, snapshot, state in rows.all():
        shared = _shared_hash(snapshot)
        if head is not None and head[0] == shared:
            lineage = head[1]
        else:
            parent = head[1] if head else ""
            lineage = hashlib.sha256(f"{parent}\n{shared}".encode()).hexdigest()
        connection.execute(
            revisions.update()
            .where(revisions.c.number == number)
            .values(shared_hash=shared, parent_shared_hash=head[0] if head else None, lineage=lineage)
        )
        if state in _HEAD_STATES:
            head = (shared, lineage)


def downgrade() -> None:
    with op.batch_alter_table("revisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_revisions_lineage"))
        batch_op.drop_column("lineage")
        batch_op.drop_column("parent_shared_hash")
        batch_op.drop_column("shared_hash")
    op.drop_table("ha_pairing_code")
    op.drop_table("ha_pairing")
