"""Password protection of the console menu, like pfSense's "Password protect the console menu".

Where the setting lives, and why there. The console menu (overlay/usr/lib/fulcrum/console-menu,
root, on tty1 and the serial port) reads one shadow-style file, `settings.console_password_file`
(/data/fulcrum/console-password on the appliance): the file being there is the setting, and its
one line is the crypt(3) SHA-512 hash of the console password. The API writes it itself, as it
writes keepalived's maintenance track file, in the one directory it may write:

- The file is the only store, so the dashboard and the console cannot disagree (a copy in the
  database would have to be converged after a commit that failed).
- Routing it through fulcrum-applyd would add nothing to least privilege: the API decides this
  setting either way, so a compromised API could ask the helper to turn protection off just as
  well; it would only widen the root helper's interface. The root side stays a reader that
  treats the file as data: one strictly matched `$6$salt$hash` line, checked with `openssl passwd`.
- It is node-local by construction: not in the database, so never replicated to the HA peer nor
  part of a revision; a factory reset (which erases /data) turns it off.
- Not root's entry in /etc/shadow checked through PAM (login, su): that file is on the read-only
  root, the image locks root ("!*") when it is built, and a writable shadow would give every PAM
  user of it (sshd among them) a password to accept.

The password itself is never stored, logged, audited or returned; `openssl passwd -6` hashes it
from stdin (the same tool the console checks it with, on both builds of the image).
"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session

from fulcrum.errors import ConfigInvalid
from fulcrum.schemas.console import ConsoleAccess, ConsoleAccessUpdate
from fulcrum.services import audit

SHA512_CRYPT = re.compile(r"\$6\$[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{86}")
HASH_COMMAND = ["openssl", "passwd", "-6", "-stdin"]  # a fresh random salt each time
HASH_TIMEOUT = 10.0


def get_console_access(path: Path) -> ConsoleAccess:
    try:
        changed = path.stat().st_mtime
    except FileNotFoundError:
        return ConsoleAccess(password_required=False, changed_at=None)
    return ConsoleAccess(password_required=True, changed_at=datetime.fromtimestamp(changed, UTC))


def set_console_access(
    session: Session, actor: audit.Actor, path: Path, change: ConsoleAccessUpdate
) -> ConsoleAccess:
    before = get_console_access(path)
    if change.password is not None and not change.password_required:
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "password"],
                    "msg": "a console password is set only with password_required: true",
                    "type": "value_error",
                }
            ]
        )
    if change.password_required and change.password is None and not before.password_required:
        raise ConfigInvalid(
            [
                {
                    "loc": ["body", "password"],
                    "msg": "set a console password to turn protection on: "
                    "the appliance's root account has none",
                    "type": "missing",
                }
            ]
        )
    # Audited first: the entry is flushed with the request's transaction, and the file (which
    # the console reads at once) is the last step, so a refused change leaves the console as it was.
    audit.record(
        session,
        actor,
        "node.console",
        "",
        {
            "password_required": {"before": before.password_required, "after": change.password_required},
            "password_changed": change.password is not None,
        },
    )
    if not change.password_required:
        path.unlink(missing_ok=True)
    elif change.password is not None:
        _write_atomically(path, _sha512_crypt(change.password) + "\n")
    return get_console_access(path)


def _sha512_crypt(password: str) -> str:
    hashed = subprocess.run(
        HASH_COMMAND, input=password + "\n", capture_output=True, text=True, timeout=HASH_TIMEOUT, check=False
    )
    line = hashed.stdout.strip()
    if hashed.returncode != 0 or not SHA512_CRYPT.fullmatch(line):
        raise RuntimeError(
            f"openssl passwd -6 failed (exit {hashed.returncode}): {hashed.stderr.strip()[:200]}"
        )
    return line


def _write_atomically(path: Path, text: str) -> None:
    staged = path.with_name(path.name + ".new")
    staged.unlink(missing_ok=True)
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(staged, path)
