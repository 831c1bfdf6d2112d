"""cluster members

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

A cluster of active nodes behind BGP ECMP shares one configuration from one writer
(fulcrum.ha.cluster): on the writer, a row per member with the key of the pairing exchange made
with it and its pinned certificate; on a member, its pairing row marks the peer as the cluster's
writer rather than the other node of an HA pair.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "cluster_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("url", sa.String(length=255), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("certificate", sa.String(length=64), nullable=True),
        sa.Column("joined_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cluster_members")),
        sa.UniqueConstraint("name", name=op.f("uq_cluster_members_name")),
        sa.UniqueConstraint("url", name=op.f("uq_cluster_members_url")),
    )
    with op.batch_alter_table("ha_pairing", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cluster_writer", sa.Boolean(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("ha_pairing", schema=None) as batch_op:
        batch_op.drop_column("cluster_writer")
    op.drop_table("cluster_members")
