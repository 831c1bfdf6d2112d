"""Bounds on what an import reads, so hostile input costs bounded time and memory."""

from __future__ import annotations

import re

from fulcrum.errors import ConfigInvalid

MAX_TEXT_CHARS = 1_000_000  # one file: generous for a hand-written keepalived.conf
MAX_INCLUDES = 64  # uploaded include files
MAX_TOTAL_CHARS = 4_000_000  # everything read, counting a file again each time it is included
MAX_INCLUDE_DEPTH = 8
MAX_FILE_READS = 1_000  # files read, counting repeats: an empty file included by many costs too
MAX_BLOCK_DEPTH = 16  # keepalived's deepest real nesting is 4 (virtual_server/real_server/HTTP_GET/url)
MAX_DIRECTIVES = 200_000
MAX_RANGE = 256  # addresses one virtual_server_group range may expand to

# Text has tabs and line ends; anything else below a space (NUL above all) means binary input.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class ImportRejected(ConfigInvalid):
    """The input cannot be read at all (too large, not text, an include loop): nothing is imported."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__([{"loc": ["body", field], "msg": message, "type": "value_error"}])


def check_text(field: str, name: str, text: str) -> None:
    """Refuse oversized or binary text before any parsing."""
    if len(text) > MAX_TEXT_CHARS:
        raise ImportRejected(field, f"{name} is {len(text)} characters; at most {MAX_TEXT_CHARS} are read")
    bad = _CONTROL.search(text)
    if bad is not None:
        number = text.count("\n", 0, bad.start()) + 1
        raise ImportRejected(
            field,
            f"{name} line {number}: control character {ord(bad.group()):#04x}; this is not a text "
            "configuration",
        )
