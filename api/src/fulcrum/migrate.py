"""Schema upgrades. Alembic is the only way the schema changes (an appliance keeps its database
across firmware upgrades), so start-up runs `upgrade head` before serving.

Both root slots share the database on /data, so a firmware upgrade and its roll-back meet it:
- before a newer version migrates the schema, it keeps a copy of the database as it was,
  `fulcrum.db.at-<revision>` beside it;
- an older version that finds the database at a schema it does not know (a newer version migrated
  it, then was rolled back) puts back the copy at its own schema and keeps the newer database as
  `fulcrum.db.at-<its revision>`. What was changed under the newer version is not in the copy.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

log = logging.getLogger("fulcrum.migrate")

SQLITE_PREFIX = "sqlite:///"
VERSIONS = Path(__file__).resolve().parent / "migrations" / "versions"
_REVISION = re.compile(r'^revision(?::[^=]*)? = "([^"]+)"$', re.MULTILINE)
_DOWN_REVISION = re.compile(r'^down_revision(?::[^=]*)? = (?:"([^"]+)"|None)$', re.MULTILINE)


class SchemaTooNew(RuntimeError):
    """The database's schema is newer than this version's, and no copy at this version's was kept."""


def alembic_config(database_url: str) -> Config:
    from alembic.config import Config  # Alembic is imported only when there is work for it

    config = Config()
    config.set_main_option("script_location", "fulcrum:migrations")
    config.set_main_option("sqlalchemy.url", database_url)
    config.set_main_option("file_template", "%%(year)d-%%(month).2d-%%(day).2d_%%(rev)s_%%(slug)s")
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    if revision == "head" and database_url.startswith(SQLITE_PREFIX):
        database = Path(database_url.removeprefix(SQLITE_PREFIX))
        if database.is_file() and _current_revision(database) == shipped_head():
            # Every start but the first after an upgrade: nothing to migrate, and importing Alembic
            # is about a tenth of the API's imports (0.11-0.2 s of 1.5-1.85 s natively; imports run
            # about 30 times slower under emulation, 70-82 s for `import fulcrum.main` there).
            return
    from alembic import command

    config = alembic_config(database_url)
    if revision == "head" and database_url.startswith(SQLITE_PREFIX):
        _meet_other_versions(Path(database_url.removeprefix(SQLITE_PREFIX)), config)
    command.upgrade(config, revision)


@cache
def shipped_head() -> str | None:
    """The newest schema revision of this version's migrations, read from their files without
    Alembic: the one revision no other names as its down_revision. None when that is not one
    revision (a branch, or a file the patterns do not read): then Alembic decides."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in VERSIONS.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        revision, down = _REVISION.search(text), _DOWN_REVISION.search(text)
        if revision is None or down is None:
            return None
        revisions.add(revision.group(1))
        if down.group(1):
            parents.add(down.group(1))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def copy_at(database: Path, revision: str) -> Path:
    return database.with_name(f"{database.name}.at-{revision}")


def _meet_other_versions(database: Path, config: Config) -> None:
    from alembic.script import ScriptDirectory

    if not database.is_file():
        return
    script = ScriptDirectory.from_config(config)
    head = script.get_current_head()
    current = _current_revision(database)
    if current is None or current == head or head is None:
        return
    if _known(script, current):
        log.info("keeping the database at schema %s before migrating it to %s", current, head)
        _copy(database, copy_at(database, current))
        return
    kept = copy_at(database, head)
    if not kept.is_file():
        raise SchemaTooNew(
            f"the database {database} is at schema {current}, which this version does not know (a newer "
            f"version migrated it), and no copy at this version's schema {head} was kept ({kept})"
        )
    newer = copy_at(database, current)
    log.warning("the database is at schema %s, newer than this version's %s (a roll-back): restoring %s "
                "and keeping the newer one as %s", current, head, kept, newer)  # fmt: skip
    _copy(database, newer)
    _copy(kept, database)


def _current_revision(database: Path) -> str | None:
    """The revision in the database's alembic_version table (SQLite alone, as Alembic reads it);
    None when it has none."""
    connection = sqlite3.connect(database)
    try:
        rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.OperationalError:  # no such table: never migrated
        return None
    finally:
        connection.close()
    if len(rows) > 1:
        raise RuntimeError(f"the database {database} is at several schema revisions: {rows}")
    return str(rows[0][0]) if rows else None


def _known(script: ScriptDirectory, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except Exception:  # noqa: BLE001 (alembic raises several kinds for a revision it lacks)
        return False


def _copy(source: Path, target: Path) -> None:
    """SQLite's own backup: consistent whatever its write-ahead log holds."""
    with sqlite3.connect(source) as origin, sqlite3.connect(target) as copy:
        origin.backup(copy)
    origin.close()
    copy.close()
