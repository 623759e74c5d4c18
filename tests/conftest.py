"""Fixtures: one Bigtable emulator per test session, a fresh instance per test."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from btts import admin
from btts.emulator import ENV_HOST, Emulator, PubSubEmulator

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BTTS_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def bigtable_emulator():
    """A real cbtemulator on a free loopback port; BIGTABLE_EMULATOR_HOST points at it."""
    with Emulator() as emu:
        yield emu


@pytest.fixture(scope="session")
def pubsub_emulator():
    """A real Pub/Sub emulator; PUBSUB_EMULATOR_HOST points at it."""
    with PubSubEmulator() as emu:
        yield emu


@pytest.fixture
def target(bigtable_emulator) -> admin.Target:
    """A fresh instance on the shared emulator: tests never see each other's tables."""
    assert os.environ[ENV_HOST] == bigtable_emulator.endpoint
    return admin.Target("test-project", f"t{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def golden_cases() -> dict[str, dict]:
    path = SHARED / "golden" / "doc_examples.json"
    if not path.exists():
        pytest.fail(f"golden cases not found at {path}; set BTTS_SHARED to the shared/ folder")
    return {case["id"]: case for case in json.loads(path.read_text())["cases"]}


def load_golden_ids() -> list[str]:
    path = SHARED / "golden" / "doc_examples.json"
    return [case["id"] for case in json.loads(path.read_text())["cases"]]
