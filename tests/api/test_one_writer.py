"""The one-writer rule of an HA pair, walked over every route of the app: on a paired standby each
route that changes anything is refused (409 standby_read_only), except the explicit allow-list
below. A new route is refused until it is marked and listed here."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from apitest import WEB
from fulcrum.db import SAFE_METHODS
from fulcrum.ha.runtime import HaRuntime
from fulcrum.routers.one_writer import StandbyRule, standby_rule
from test_ha_endpoints import FRONT, ha, notify, paired_with  # noqa: F401 (ha: the fixture)

# Changes of this node's own state, sessions, and the peer link.
ANY_NODE = {
    ("POST", "/api/v1/setup"),
    ("POST", "/api/v1/setup/restore"),
    ("POST", "/api/v1/backup"),
    ("POST", "/api/v1/auth/login"),
    ("POST", "/api/v1/auth/logout"),
    ("POST", "/api/v1/tokens"),
    ("DELETE", "/api/v1/tokens/{token_id}"),
    ("PUT", "/api/v1/node/console"),
    ("PUT", "/api/v1/node/console/management"),  # a revision whose shared part is the running one
    ("POST", "/api/v1/revisions/{number}/confirm"),
    ("PUT", "/api/v1/node"),
    ("PATCH", "/api/v1/node"),
    ("PUT", "/api/v1/network"),
    ("DELETE", "/api/v1/network"),
    ("PUT", "/api/v1/bgp"),
    ("DELETE", "/api/v1/bgp"),
    ("POST", "/api/v1/ha/pairing-code"),
    ("POST", "/api/v1/ha/pair"),
    ("DELETE", "/api/v1/ha/pair"),
    ("POST", "/api/v1/ha/sync"),
    ("POST", "/api/v1/ha/resolve"),
    ("POST", "/api/v1/ha/maintenance"),
    ("POST", "/api/v1/ha/make-active"),
    ("POST", "/api/v1/ha/drill"),
    ("POST", "/api/v1/ha/upgrade/stop"),  # after the hand-over the driving node is the standby
    ("POST", "/api/v1/peer/pair"),
    ("DELETE", "/api/v1/peer/pair"),
    ("POST", "/api/v1/peer/config"),
    ("POST", "/api/v1/peer/certificate"),
    ("POST", "/api/v1/peer/cluster"),  # the writer just paired with makes this node a member
    ("POST", "/api/v1/peer/maintenance"),
    ("POST", "/api/v1/peer/firmware/bundle"),  # the pair upgrade: the active node upgrades the standby
    ("POST", "/api/v1/peer/firmware/install"),
    ("POST", "/api/v1/peer/firmware/reboot"),
    ("PUT", "/api/v1/tls/certificate"),
    ("POST", "/api/v1/tls/csr"),
    ("POST", "/api/v1/firmware/bundle"),
    ("DELETE", "/api/v1/firmware/bundle"),
    ("POST", "/api/v1/firmware/install"),  # each node of a pair is upgraded on its own
    ("POST", "/api/v1/firmware/cancel"),
    ("POST", "/api/v1/firmware/reboot"),
    ("POST", "/api/v1/alerts/channels"),
    ("PUT", "/api/v1/alerts/channels/{channel_id}"),
    ("DELETE", "/api/v1/alerts/channels/{channel_id}"),
    ("POST", "/api/v1/alerts/channels/{channel_id}/test"),
    ("POST", "/api/v1/alerts/rules"),
    ("PUT", "/api/v1/alerts/rules/{rule_id}"),
    ("DELETE", "/api/v1/alerts/rules/{rule_id}"),
    ("POST", "/api/v1/diagnostics/ping"),
    ("POST", "/api/v1/diagnostics/traceroute"),
    ("POST", "/api/v1/diagnostics/tcp-connect"),
    ("POST", "/api/v1/diagnostics/http-get"),
    ("POST", "/api/v1/diagnostics/capture"),
}
# A commit: allowed on a standby only when it changes node-local settings alone.
NODE_LOCAL_COMMIT = {("POST", "/api/v1/revisions")}


def mutating_routes(app: FastAPI) -> list[tuple[str, str, Callable[..., Any]]]:
    """(method, full path, endpoint) of every route that is not read-only."""
    found: list[tuple[str, str, Callable[..., Any]]] = []
    for route in app.routes:
        if isinstance(route, APIRoute):
            found += [(method, route.path, route.endpoint) for method in route.methods - SAFE_METHODS]
        elif hasattr(route, "effective_route_contexts"):  # FastAPI's included-router wrapper
            for context in route.effective_route_contexts():
                methods = context.methods - SAFE_METHODS
                found += [(method, context.path, context.endpoint) for method in methods]
    return sorted(found, key=lambda item: (item[1], item[0]))


def test_only_the_allow_list_is_exempt(app: FastAPI) -> None:
    rules = {(method, path): standby_rule(endpoint) for method, path, endpoint in mutating_routes(app)}
    assert {key for key, rule in rules.items() if rule is StandbyRule.ANY_NODE} == ANY_NODE
    assert {key for key, rule in rules.items() if rule is StandbyRule.NODE_LOCAL_COMMIT} == NODE_LOCAL_COMMIT


def test_every_other_change_is_refused_on_a_standby(
    app: FastAPI, client: TestClient, session: Session, ha: HaRuntime  # noqa: F811
) -> None:
    assert client.post("/api/v1/vip-groups", json=FRONT).status_code == 201
    assert client.post("/api/v1/services", json=WEB).status_code == 201
    assert client.post("/api/v1/revisions", json={}).status_code == 201
    paired_with(session, "alpha")
    notify(app, 'INSTANCE "VG_front" BACKUP 100')
    assert client.get("/api/v1/ha/status").json()["node"]["role"] == "standby"

    refused = [(m, p) for m, p, _ in mutating_routes(app) if (m, p) not in ANY_NODE | NODE_LOCAL_COMMIT]
    assert len(refused) >= 20  # services, backends, users, VIP groups, the firewall, imports, rollback...
    for method, path in refused:
        # The refusal comes before the body is looked at: any id, an empty body.
        response = client.request(method, re.sub(r"\{[^}]+\}", "1", path), json={})
        assert response.status_code == 409, (method, path, response.text)
        assert response.json()["code"] == "standby_read_only", (method, path, response.text)

    # The commit: the candidate equals the head, so the rule lets it through (it then finds nothing
    # to commit). A shared change refused at commit: test_ha_endpoints.
    nothing = client.post("/api/v1/revisions", json={})
    assert nothing.status_code == 409 and nothing.json().get("code") != "standby_read_only", nothing.text
