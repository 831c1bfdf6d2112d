"""The peer API across versions (fulcrum.ha.wire): the two nodes of a pair run different versions
while it is upgraded one node at a time, so each reads what the other sends."""

from __future__ import annotations

from typing import Any

from fulcrum.ha import wire

OLDER_STATUS: dict[str, Any] = {  # as a node before protocol 2 answered a poll
    "name": "lb2", "priority": 100, "role": "standby", "groups": [], "maintenance": False, "writer": False,
    "head": None, "history": [], "users_hash": "0" * 64, "connections": None, "conn_sync_daemon": "off",
    "transitions": [], "time": "2026-11-28T12:00:00Z",
}  # fmt: skip


def test_an_older_nodes_status_reads_as_protocol_1_and_configuration_schema_1() -> None:
    status = wire.PeerStatus.model_validate(OLDER_STATUS)
    assert (status.protocol, status.config_schema, status.software_version) == (1, 1, None)


def test_a_newer_nodes_fields_are_ignored_rather_than_refused() -> None:
    newer = {**OLDER_STATUS, "protocol": wire.PROTOCOL + 1, "config_schema": 7, "software_version": "9.1.0+g1234567",
             "some_field_of_a_later_version": {"x": 1}}  # fmt: skip
    status = wire.PeerStatus.model_validate(newer)
    assert (status.protocol, status.config_schema, status.software_version) == (wire.PROTOCOL + 1, 7, "9.1.0+g1234567")
    assert not hasattr(status, "some_field_of_a_later_version")


def test_a_version_string_cannot_carry_markup_or_lines() -> None:
    for bad in ("<script>", "1.0\nrole: active", "x" * 65, ""):
        assert not _valid({**OLDER_STATUS, "software_version": bad}), bad


def _valid(data: dict[str, Any]) -> bool:
    try:
        wire.PeerStatus.model_validate(data)
    except ValueError:
        return False
    return True
