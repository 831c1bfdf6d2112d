"""network settings

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24

The appliance's own network (interfaces, bonds, VLANs, routes, DNS, NTP, host name): one JSON
document, node-local.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "network_settings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_network_settings")),
    )


def downgrade() -> None:
    op.drop_table("network_settings")
