"""The API leaves what importing and starting it made out of later garbage collections."""

from __future__ import annotations

import gc

from fastapi.testclient import TestClient


def test_objects_made_before_the_app_serves_are_frozen_out_of_collection(anon: TestClient) -> None:
    # A full collection walked ~200,000 import-time objects (0.1 s natively at every pass).
    assert gc.get_freeze_count() > 50_000
    assert len(gc.get_objects()) < gc.get_freeze_count()
