"""Schemathesis hooks for tests/fuzz (loaded through SCHEMATHESIS_HOOKS).

The fuzzer is an admin. Everything is fuzzed, except the few requests that would lock the fuzzer
itself out, and only those: changing or deleting its own account (a new password, role or
disabled flag ends its access) and revoking its own API token. Other users and tokens it creates
are fair game. The console menu's own route answers the console's token only (it is the one the
API writes for the console at start, fulcrum.services.console_token): it is fuzzed with that token.
"""

from __future__ import annotations

import os

import schemathesis

OWN_USER = os.environ["FULCRUM_FUZZ_USER_ID"]
OWN_TOKEN = os.environ["FULCRUM_FUZZ_TOKEN_ID"]
ADMIN_TOKEN = os.environ["FULCRUM_FUZZ_ADMIN_TOKEN"]
CONSOLE_TOKEN = os.environ["FULCRUM_FUZZ_CONSOLE_TOKEN"]
CONSOLE_ROUTE = r".*/node/console/management$"


@schemathesis.hook
def filter_case(context, case) -> bool:  # type: ignore[no-untyped-def]
    parameters = case.path_parameters or {}
    if case.method.upper() in ("PATCH", "DELETE") and str(parameters.get("user_id")) == OWN_USER:
        return False
    if case.method.upper() == "DELETE" and str(parameters.get("token_id")) == OWN_TOKEN:
        return False
    return True


def _bearer(token: str) -> type:
    """An auth provider that sends `token` as the bearer."""

    class Bearer:
        def get(self, case, ctx) -> str:  # type: ignore[no-untyped-def]
            return token

        def set(self, case, data: str, ctx) -> None:  # type: ignore[no-untyped-def]
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

    return Bearer


schemathesis.auth(refresh_interval=None).apply_to(path_regex=CONSOLE_ROUTE)(_bearer(CONSOLE_TOKEN))
schemathesis.auth(refresh_interval=None).skip_for(path_regex=CONSOLE_ROUTE)(_bearer(ADMIN_TOKEN))
