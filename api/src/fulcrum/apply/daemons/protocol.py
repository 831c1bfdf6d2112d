"""What every daemon the apply engine manages implements.

The engine knows no daemon by name: it runs each phase over an ordered list of `ManagedDaemon`s
and reports every step the same way (phase, daemon, ok, seconds, detail). Modelled on vyos-1x's
get_config/verify/generate/apply, with Fulcrum's stronger atomicity: every file a daemon owns goes
through `OwnedFiles` (FILE.new fsynced, FILE.prev kept, `os.replace`), so the engine can put the
previous configuration back after any later failure.

Order of the calls in one apply (each phase runs for every daemon before the next phase starts):

1. `render` stages the daemon's files as FILE.new; nothing live changes;
2. `validate` checks the staged files with the daemon's own tool (all daemons run, so an operator
   sees every error at once, each in a thread of its own beside the others': a validator touches
   only its own staged files); a daemon that fails is asked to `reject` (FILE.new kept as
   FILE.failed), the others to `discard`;
3. `precondition` says whether the daemon can run on this machine at all (keepalived: IPVS); if one
   cannot, the apply stops as VALIDATED and every daemon is asked to `discard`;
4. `install` promotes the staged files (FILE.new -> FILE, previous kept as FILE.prev);
5. `load` makes the daemon use them (nft -f, SIGHUP, ...);
6. `verify` reads back what the daemon made of them (the nftables table, the IPVS table, ...);
7. on a failure in 4-6, `undo` for every daemon whose install was attempted, in reverse order: put
   FILE.prev back and, if `load` was attempted, make the daemon run the previous configuration
   again (or stop, when there was none).

Methods raise `ToolError` (or OSError/ValueError) with a message an operator can act on; the
engine adds which daemon and which step it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fulcrum.config.snapshot import ConfigSnapshot


@dataclass(frozen=True)
class Checked:
    """A validation or read-back that passed: a summary, and warnings for the operator."""

    detail: str
    warnings: tuple[str, ...] = ()


class ManagedDaemon(Protocol):
    @property
    def name(self) -> str:
        """How step reports and error messages name the daemon, e.g. "keepalived"."""
        ...

    def render(self, snapshot: ConfigSnapshot) -> str: ...

    def validate(self) -> Checked: ...

    def reject(self) -> None: ...

    def discard(self) -> None: ...

    def precondition(self) -> tuple[bool, str]: ...

    def install(self) -> str: ...

    def load(self, snapshot: ConfigSnapshot) -> str: ...

    def verify(self, snapshot: ConfigSnapshot) -> Checked: ...

    def undo(self, loaded: bool) -> str: ...
