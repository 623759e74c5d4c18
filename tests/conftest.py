"""Fixtures: one Bigtable emulator per test session (per worker under pytest-xdist), a fresh
instance per test."""

from __future__ import annotations

import os
import uuid

import pytest

from btts import config
from btts.emulator import ENV_HOST, Emulator, PubSubEmulator
from tests.support.worked_examples import load_worked_examples


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test``), the tests marked slow go first: the worker that
    takes one then spends its minute while the other works through the rest, rather than both
    waiting on it at the end. A single process keeps the files' order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
def target(bigtable_emulator) -> config.Target:
    """A fresh instance on the shared emulator: tests never see each other's tables."""
    assert os.environ[ENV_HOST] == bigtable_emulator.endpoint
    return config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def golden_cases() -> dict[str, dict]:
    return load_worked_examples()
