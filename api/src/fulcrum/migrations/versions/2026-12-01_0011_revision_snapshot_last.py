"""revisions: the snapshot and the apply result as the row's last columns

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

SQLite reads a row's columns in their order, and a column stored after a large one is reached
only through that one's overflow pages. The snapshot (about 0.7 MB at 5,000 backends) came fifth,
before the state, digest and lineage that are filtered on: the pending confirmation's lookup (the
confirm watcher's every poll), the HA lineage's history (the watcher's every round, and every
write request's one-writer check) and /metrics' count by state each read every revision's
snapshot, a cost that grew with every commit (revisions are never pruned). Natively at 5,000
backends: 4.2-4.4 ms each with 41 revisions and 46-47 ms with 400; with the large columns last
0.01-0.09 ms at either count (under the VM's emulation about fifteen times as long). The table is
rebuilt with the same columns, the large ones last; nothing else changes.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SMALL_FIRST = (  # the order of the rebuilt table
    "number",
    "created_at",
    "author",
    "message",
    "digest",
    "state",
    "previous",
    "rollback_of",
    "confirm_deadline",
    "confirmed_at",
    "shared_hash",
    "parent_shared_hash",
    "lineage",
    "apply_result",
    "snapshot",
)


def upgrade() -> None:
    with op.batch_alter_table("revisions", recreate="always", partial_reordering=[SMALL_FIRST]):
        pass


def downgrade() -> None:
    # Nothing to undo: the columns are the same, and 0010's code reads them by name in any order.
    pass
