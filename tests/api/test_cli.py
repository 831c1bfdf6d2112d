from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from apitest import WEB
from fulcrum.cli import main


def test_drain_commit_and_list_through_the_cli(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    client.post("/api/v1/services", json=WEB)
    assert main(["commit", "-m", "first"], client=client) == 0
    assert main(["drain", "web", "198.51.100.1"], client=client) == 0
    assert main(["changes"], client=client) == 0
    out = capsys.readouterr().out
    assert "weight 2 → 0: drains" in out
    assert main(["services"], client=client) == 0
    assert "1/2 backends" in capsys.readouterr().out


def test_cli_shows_field_errors_and_fails(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    client.post("/api/v1/services", json=WEB)
    assert main(["weight", "web", "198.51.100.1", "-5"], client=client) == 1
    assert "weight: Input should be greater than or equal to 0" in capsys.readouterr().err
    assert main(["drain", "web", "203.0.113.9"], client=client) == 1
    assert "has no backend 203.0.113.9" in capsys.readouterr().err
