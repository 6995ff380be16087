"""What SQL a piece of code sends: ``statements(engine, pick)`` collects, in order, what
``pick`` makes of each statement the engine executes meanwhile (None: not collected)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa


@contextmanager
def statements(engine, pick: Callable[[str, Any], Any]) -> Iterator[list[Any]]:
    seen: list[Any] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        got = pick(statement, parameters)
        if got is not None:
            seen.append(got)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
