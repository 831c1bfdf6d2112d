"""Atomic staging, promotion and restore of the live config files."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from fulcrum.apply.files import (
    failed_path,
    mark_failed,
    new_path,
    prev_path,
    promote,
    restore_previous,
    write_json_atomic,
    write_new,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_new_stages_without_touching_the_live_file(tmp_path: Path) -> None:
    live = tmp_path / "keepalived.conf"
    live.write_text("old\n")
    staged = write_new(live, "new\n")
    assert staged == new_path(live) == tmp_path / "keepalived.conf.new"
    assert staged.read_text() == "new\n"
    assert _mode(staged) == 0o644
    assert live.read_text() == "old\n"


def test_write_new_resets_the_mode_of_a_leftover_candidate(tmp_path: Path) -> None:
    live = tmp_path / "fulcrum.nft"
    new_path(live).write_text("stale")
    new_path(live).chmod(0o666)
    write_new(live, "fresh", mode=0o600)
    assert new_path(live).read_text() == "fresh"
    assert _mode(new_path(live)) == 0o600


def test_promote_keeps_the_previous_file(tmp_path: Path) -> None:
    live = tmp_path / "keepalived.conf"
    live.write_text("old\n")
    write_new(live, "new\n")
    assert promote(live) is True
    assert live.read_text() == "new\n"
    assert prev_path(live).read_text() == "old\n"
    assert not new_path(live).exists()


def test_first_promotion_has_no_previous_and_drops_a_stale_one(tmp_path: Path) -> None:
    live = tmp_path / "keepalived.conf"
    prev_path(live).write_text("from some older life\n")
    write_new(live, "first\n")
    assert promote(live) is False
    assert live.read_text() == "first\n"
    assert not prev_path(live).exists()


def test_promote_without_a_candidate_fails_and_changes_nothing(tmp_path: Path) -> None:
    live = tmp_path / "keepalived.conf"
    live.write_text("old\n")
    with pytest.raises(FileNotFoundError, match=r"keepalived\.conf\.new does not exist"):
        promote(live)
    assert live.read_text() == "old\n"
    assert not prev_path(live).exists()


def test_restore_previous_puts_the_old_file_back_and_keeps_the_rejected_one(tmp_path: Path) -> None:
    live = tmp_path / "fulcrum.nft"
    live.write_bytes(b"old ruleset\n")
    write_new(live, "new ruleset\n")
    promote(live)
    assert restore_previous(live) is True
    assert live.read_bytes() == b"old ruleset\n"
    assert failed_path(live).read_text() == "new ruleset\n"
    assert not prev_path(live).exists()


def test_restore_without_a_previous_file_leaves_no_live_file(tmp_path: Path) -> None:
    live = tmp_path / "fulcrum.nft"
    write_new(live, "first ruleset\n")
    promote(live)
    assert restore_previous(live) is False
    assert not live.exists()
    assert failed_path(live).read_text() == "first ruleset\n"


def test_mark_failed_keeps_the_candidate_for_debugging(tmp_path: Path) -> None:
    live = tmp_path / "keepalived.conf"
    live.write_text("old\n")
    write_new(live, "broken\n")
    assert mark_failed(live) == failed_path(live)
    assert failed_path(live).read_text() == "broken\n"
    assert not new_path(live).exists()
    assert live.read_text() == "old\n"


def test_write_json_atomic_replaces_the_whole_document(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_json_atomic(target, {"applied": 1})
    write_json_atomic(target, {"applied": 2})
    assert json.loads(target.read_text()) == {"applied": 2}
    assert _mode(target) == 0o644
    assert [entry.name for entry in tmp_path.iterdir()] == ["state.json"]
