"""bgp settings

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28

This node's BGP announcements of the VIPs through FRR (ASN, router-id, neighbors, communities,
which VIPs): one JSON document, node-local.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bgp_settings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bgp_settings")),
    )


def downgrade() -> None:
    op.drop_table("bgp_settings")
