"""The password hashing cost every test-run API uses (fulcrum.settings: password_hash_*): argon2id at
OWASP's minimum, 19 MiB and 2 passes on 1 lane, against the appliance's 64 MiB, 3 passes, 4 lanes.
The suites create an admin and log in thousands of times (one hash at the appliance's cost took a
quarter of a second here beside a kernel VM); the image tests boot the appliance with its own
defaults, and tests/api/test_auth.py checks those defaults."""

from __future__ import annotations

FAST_PASSWORD_HASHING = {
    "FULCRUM_PASSWORD_HASH_MEMORY_KIB": "19456",
    "FULCRUM_PASSWORD_HASH_TIME_COST": "2",
    "FULCRUM_PASSWORD_HASH_PARALLELISM": "1",
}
