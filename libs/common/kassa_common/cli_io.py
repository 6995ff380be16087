"""What every ``kassa`` command shares: its output (text, or JSON with ``--json``) and its
transaction on a one-connection engine."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.orm import Session

from kassa_common.bootstrap import process_engine
from kassa_common.config import Settings
from kassa_common.db import make_session_factory, unit_of_work


def out(args: argparse.Namespace, data: dict[str, Any] | list[Any], text: str) -> None:
    print(json.dumps(data) if args.json else text)


@contextmanager
def unit_of_work_for(settings: Settings) -> Iterator[Session]:
    """One command's transaction on a one-connection engine (committed if the block succeeds)."""
    engine = process_engine(settings, "cli", pool_size=1)
    try:
        with unit_of_work(make_session_factory(engine)) as session:
            yield session
    finally:
        engine.dispose()
