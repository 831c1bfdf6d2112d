"""An imported configuration, rendered by Fulcrum, is accepted by the real `keepalived -t`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fulcrum.config.snapshot import ConfigSnapshot, Node
from fulcrum.importer import ImportFormat, import_text
from fulcrum.render.keepalived import RuntimePaths, render_keepalived

FIXTURES = Path(__file__).parents[1] / "importer" / "fixtures"
INPUTS = sorted(
    [*(p.relative_to(FIXTURES) for p in (FIXTURES / "seed").glob("*.sh"))]
    + [p.relative_to(FIXTURES) for p in (FIXTURES / "keepalived").glob("keepalived.conf.*")]
)


@pytest.mark.parametrize("source", [str(p) for p in INPUTS])
def test_imported_config_passes_keepalived_t(
    source: str, keepalived_accepts: Callable[[str, ConfigSnapshot], None]
) -> None:
    result = import_text(ImportFormat.AUTO, (FIXTURES / source).read_text())
    snapshot = ConfigSnapshot(services=result.services, vip_groups=result.vip_groups, node=Node.model_validate(result.node))
    # Only the fwmark sample has nothing Fulcrum can hold (its one service is a fwmark service).
    assert snapshot.services or snapshot.vip_groups or source.endswith(".fwmark")
    keepalived_accepts(render_keepalived(snapshot, RuntimePaths()), snapshot)
