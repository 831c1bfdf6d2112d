"""Schemathesis hooks for tests/fuzz (loaded through SCHEMATHESIS_HOOKS).

The fuzzer is an admin. Everything is fuzzed, except the few requests that would lock the fuzzer
itself out, and only those: changing or deleting its own account (a new password, role or
disabled flag ends its access) and revoking its own API token. Other users and tokens it creates
are fair game.
"""

from __future__ import annotations

import os

import schemathesis

OWN_USER = os.environ["FULCRUM_FUZZ_USER_ID"]
OWN_TOKEN = os.environ["FULCRUM_FUZZ_TOKEN_ID"]


@schemathesis.hook
def filter_case(context, case) -> bool:  # type: ignore[no-untyped-def]
    parameters = case.path_parameters or {}
    if case.method.upper() in ("PATCH", "DELETE") and str(parameters.get("user_id")) == OWN_USER:
        return False
    if case.method.upper() == "DELETE" and str(parameters.get("token_id")) == OWN_TOKEN:
        return False
    return True
