"""HA and firewall settings

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21

VIP groups (shared between the nodes of a pair), this node's own settings, and the management
firewall policy.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "firewall_settings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_firewall_settings")),
    )
    op.create_table(
        "node_settings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_node_settings")),
    )
    op.create_table(
        "vip_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("virtual_router_id", sa.Integer(), nullable=False),
        sa.Column("addresses", sa.JSON(), nullable=False),
        sa.Column("advert_interval", sa.Float(), nullable=False),
        sa.Column("preempt", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vip_groups")),
        sa.UniqueConstraint("name", name=op.f("uq_vip_groups_name")),
    )


def downgrade() -> None:
    op.drop_table("vip_groups")
    op.drop_table("node_settings")
    op.drop_table("firewall_settings")
