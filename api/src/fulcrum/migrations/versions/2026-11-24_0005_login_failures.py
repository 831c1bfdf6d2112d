"""login failures

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24

The login throttle's state, per account and per address, so that it survives a restart.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "login_failures_by_account",
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failed_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("username", name=op.f("pk_login_failures_by_account")),
    )
    op.create_table(
        "login_failures_by_address",
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failed_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("address", "username", name=op.f("pk_login_failures_by_address")),
    )
    with op.batch_alter_table("login_failures_by_account", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_login_failures_by_account_last_failed_at"), ["last_failed_at"], unique=False
        )
    with op.batch_alter_table("login_failures_by_address", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_login_failures_by_address_last_failed_at"), ["last_failed_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("login_failures_by_address", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_failures_by_address_last_failed_at"))
    with op.batch_alter_table("login_failures_by_account", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_failures_by_account_last_failed_at"))
    op.drop_table("login_failures_by_address")
    op.drop_table("login_failures_by_account")
