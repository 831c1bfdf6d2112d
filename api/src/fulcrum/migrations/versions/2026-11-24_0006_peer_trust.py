"""Peer link trust: pinned certificates and persisted nonces

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24

On the pairing, the SHA-256 of the peer's TLS certificate (pinned: every connection to the peer
must present it) and of this node's own certificate as the peer has pinned it (a renewed
certificate is announced to the peer when they differ). A pairing made before this revision has
neither: over HTTPS it must be made again. The nonces of accepted peer requests, kept for as
long as their timestamps could pass, so that a restart does not forget them. On the pairing
code, its wrong tries per source address (each address gets only a few).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ha_pairing", schema=None) as batch_op:
        batch_op.add_column(sa.Column("peer_certificate", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("announced_certificate", sa.String(length=64), nullable=True))
    with op.batch_alter_table("ha_pairing_code", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failures_by_source", sa.JSON(), nullable=False, server_default="{}"))
    op.create_table(
        "ha_peer_nonces",
        sa.Column("nonce", sa.String(length=32), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("nonce", name=op.f("pk_ha_peer_nonces")),
    )
    with op.batch_alter_table("ha_peer_nonces", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ha_peer_nonces_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ha_peer_nonces", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ha_peer_nonces_expires_at"))
    op.drop_table("ha_peer_nonces")
    with op.batch_alter_table("ha_pairing_code", schema=None) as batch_op:
        batch_op.drop_column("failures_by_source")
    with op.batch_alter_table("ha_pairing", schema=None) as batch_op:
        batch_op.drop_column("announced_certificate")
        batch_op.drop_column("peer_certificate")
