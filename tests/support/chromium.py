"""Real Chromium for the tests: the system's binary (CHROMIUM_PATH, or one on PATH) and the
flags a headless run in a container needs."""

from __future__ import annotations

import os
import shutil

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str | None:
    """A system Chromium (CHROMIUM_PATH, or one on PATH); None lets Playwright use its own."""
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
