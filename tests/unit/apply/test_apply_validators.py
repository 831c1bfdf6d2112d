"""The real validators: keepalived -t and nft -c, and how their output is trimmed."""

from __future__ import annotations

from pathlib import Path

from fulcrum.apply.validators import keepalived_message, validate_keepalived, validate_nftables
from fulcrum.render import RuntimePaths, render_keepalived, render_nftables

from applytest import Netns, make_snapshot

BROKEN_KEEPALIVED = """\
global_defs {
    router_id lb1
}
virtual_server 192.0.2.10 80 {
    lvs_sched wlc
    lvs_method NAT
    protocol TCP
    nonsense_keyword 5
    real_server 10.0.0.11 80 {
        weight 1
    }
}
"""

BROKEN_RULESET = """\
table inet fulcrum {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport 22 acept
	}
}
"""


def test_rendered_keepalived_config_passes(tmp_path: Path, netns: Netns) -> None:
    path = tmp_path / "keepalived.conf"
    path.write_text(render_keepalived(make_snapshot(), RuntimePaths()))
    result = validate_keepalived(path, netns.prefix)
    assert result.ok, result.message
    assert result.message == ""


def test_broken_keepalived_config_fails_with_keepaliveds_words(tmp_path: Path) -> None:
    path = tmp_path / "keepalived.conf"
    path.write_text(BROKEN_KEEPALIVED)
    result = validate_keepalived(path)
    assert not result.ok
    assert f"({path}: Line 8) Unknown keyword 'nonsense_keyword'" in result.message


def test_missing_keepalived_config_is_an_error_not_a_pass(tmp_path: Path) -> None:
    # keepalived -t itself exits 0 for a missing file.
    result = validate_keepalived(tmp_path / "absent.conf")
    assert not result.ok
    assert "absent.conf does not exist" in result.message


def test_keepalived_message_drops_banners_blank_lines_and_repeats() -> None:
    output = "\n".join(
        [
            "Keepalived v2.2.7 (01/16,2022)",
            "",
            "(Line 5) Extra '}' found",
            "(/etc/keepalived/keepalived.conf: Line 5) Extra '}' found",
            "There are 1 missing '}'s or extra '{'s",
            "There are 1 missing '}'s or extra '{'s",
            "Running on Linux 6.1.0 #1 SMP",
        ]
    )
    assert keepalived_message(output) == (
        "(/etc/keepalived/keepalived.conf: Line 5) Extra '}' found\nThere are 1 missing '}'s or extra '{'s"
    )


def test_rendered_ruleset_passes(tmp_path: Path, netns: Netns) -> None:
    path = tmp_path / "fulcrum.nft"
    path.write_text(render_nftables(make_snapshot()))
    result = validate_nftables(path, netns.prefix)
    assert result.ok, result.message


def test_broken_ruleset_fails_with_nfts_words_and_marker(tmp_path: Path, netns: Netns) -> None:
    path = tmp_path / "fulcrum.nft"
    path.write_text(BROKEN_RULESET)
    result = validate_nftables(path, netns.prefix)
    assert not result.ok
    lines = result.message.splitlines()
    assert lines[0].startswith(f"{path}:4:") and "Error: syntax error" in lines[0]
    assert lines[1].strip() == "tcp dport 22 acept"
    assert lines[2].strip() == "^"


def test_missing_ruleset_is_an_error(tmp_path: Path) -> None:
    result = validate_nftables(tmp_path / "absent.nft")
    assert not result.ok
    assert "absent.nft does not exist" in result.message


ALL_DRAINED = """\
virtual_server 192.0.2.10 80 {
    lvs_sched wrr
    lvs_method NAT
    protocol TCP
    real_server 10.0.0.11 80 {
        weight 0
        TCP_CHECK {
            connect_timeout 1
        }
    }
}
"""


def test_an_all_drained_service_passes_with_keepalived_warning_reported(tmp_path: Path) -> None:
    """keepalived -t exits 5 on its warning for a service whose backends all have weight 0; that
    warning, and only that one, is a drain rather than an error."""
    path = tmp_path / "drained.conf"
    path.write_text(ALL_DRAINED)
    result = validate_keepalived(path)
    assert result.ok
    assert "reducing quorum to 0" in result.message


def test_another_warning_next_to_the_benign_one_still_fails(tmp_path: Path) -> None:
    path = tmp_path / "drained-and-wrong.conf"
    path.write_text(ALL_DRAINED.replace("    protocol TCP\n", "    protocol TCP\n    nonsense_keyword 5\n"))
    result = validate_keepalived(path)
    assert not result.ok
    assert "nonsense_keyword" in result.message
