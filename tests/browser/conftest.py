"""Browser tests run against the same process stack as the e2e tests, in real Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import (  # noqa: F401
    broker_proxy,
    pytest_collection_modifyitems,
    receiver,
    sessions,
    stack,
    stack_database_url,
)

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    p = context.new_page()
    yield p
    context.close()


@pytest.fixture
def phone(browser):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    context.set_default_timeout(15_000)
    p = context.new_page()
    yield p
    context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def screenshots(artifacts) -> Path:
    """Where the screenshots of the pages looked at go (git-ignored, kept after the run)."""
    folder = artifacts / "screens"
    folder.mkdir(exist_ok=True)
    return folder
