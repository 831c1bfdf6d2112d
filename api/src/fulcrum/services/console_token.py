"""The console menu's credential for the one thing it asks the API to do: change the management
address (services.console_network).

The console is trusted like the power button (overlay/usr/lib/fulcrum/console-menu), but it runs
as root and the API does not: it reaches the API over loopback like any client, and needs a
credential no remote client can have. At every start the API makes a new random token and writes
it to `settings.console_token_file` (/data/fulcrum/console-token on the appliance), readable by
its own user only: root reads it there, and nobody who could not already change the database
can. The token is accepted by the console's own route and no other; a restart of the API
replaces it.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

TOKEN_BYTES = 32


def issue(path: Path) -> str:
    """A new token, written to `path` (mode 0600) before it is returned; the old one is void."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(path.name + ".new")
    staged.unlink(missing_ok=True)
    descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(staged, path)
    return token


def matches(presented: str | None, issued: str | None) -> bool:
    return presented is not None and issued is not None and hmac.compare_digest(presented, issued)
