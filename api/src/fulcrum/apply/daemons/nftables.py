"""nftables as a managed daemon: the appliance's own `table inet fulcrum`, checked by `nft -c`,
loaded by `nft -f` (one kernel transaction), verified by listing the table back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fulcrum.apply.daemons.owned_files import OwnedFiles
from fulcrum.apply.daemons.protocol import Checked
from fulcrum.apply.files import new_path
from fulcrum.apply.nftables_control import (
    TABLE,
    delete_table,
    enable_ipvs_conntrack,
    load_ruleset,
    verify_loaded,
)
from fulcrum.apply.tools import ToolError
from fulcrum.apply.validators import validate_nftables
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import render_nftables


class NftablesDaemon:
    name = "nftables"

    def __init__(self, ruleset: Path, prefix: Sequence[str] = ()) -> None:
        self.ruleset = ruleset
        self.prefix = tuple(prefix)
        self.files = OwnedFiles(ruleset)

    def render(self, snapshot: ConfigSnapshot) -> str:
        return self.files.stage({self.ruleset: render_nftables(snapshot)})

    def validate(self) -> Checked:
        result = validate_nftables(new_path(self.ruleset), self.prefix)
        if not result.ok:
            raise ToolError(f"nft -c rejected {self.ruleset.name}: {result.message}")
        if result.message:
            warning = f"nft -c warned about {self.ruleset.name}: {result.message}"
            return Checked(result.message, (warning,))
        return Checked(f"nft -c accepted {self.ruleset.name}")

    def reject(self) -> None:
        self.files.reject()

    def discard(self) -> None:
        self.files.discard()

    def precondition(self) -> tuple[bool, str]:
        return True, "nftables needs nothing beyond nft"

    def install(self) -> str:
        return self.files.install()

    def load(self, snapshot: ConfigSnapshot) -> str:
        load_ruleset(self.ruleset, self.prefix)
        done = f"nft -f {self.ruleset}"
        if any(service.one_arm for service in snapshot.balanced_services()):
            enable_ipvs_conntrack(self.prefix)
            done += "; net.ipv4.vs.conntrack=1 for one-arm SNAT, TCP conntrack liberal"
        return done

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        return Checked(verify_loaded(self.prefix))

    def undo(self, loaded: bool) -> str:
        restored, done = self.files.restore()
        if loaded and self.ruleset in restored:
            if restored[self.ruleset]:
                load_ruleset(self.ruleset, self.prefix)
                done += f"; reloaded nftables from {self.ruleset}"
            else:
                delete_table(self.prefix)
                done += f"; deleted table {TABLE} (there was no previous ruleset)"
        return done
