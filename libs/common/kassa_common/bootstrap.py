"""One bootstrap for every process: the web app, the workers and the ``kassa`` commands.

It reads the settings once from the environment (``load_settings``), sets up the logs,
starts the metrics endpoint of a worker, and builds the dependencies (``wire``): the engine
(``application_name`` ``kassa-<name>``, so ``pg_stat_activity`` tells the processes apart)
and its session factory, the bus topology (private under BUS_PREFIX), and factories for
publishers and consumers, in a :class:`kassa_common.worker.Worker`. Nothing here connects:
the engine's pool and the bus connections open on first use, so a module can import this
freely and tests can ``wire`` without a process.

A worker's ``main`` is a few lines over it::

    def main() -> None:
        worker = bootstrap(Settings.from_env(), "relay")
        publisher = worker.publisher()
        worker.until_stopped(lambda stop: relay_process(worker.engine, worker.sessions, publisher, stop))

The web (``kassa_api.app.create_app``) takes plain logs and no metrics port (it serves
``/metrics`` itself); a command takes a one-connection :func:`process_engine`.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Literal

from prometheus_client import start_http_server
from sqlalchemy.engine import Engine

from kassa_common import envfile
from kassa_common.config import Settings
from kassa_common.db import make_engine, make_session_factory
from kassa_common.messaging import topology
from kassa_common.worker import Worker

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


def load_settings(*, env_file: bool = False) -> Settings:
    """The settings, read once from the environment; ``env_file`` (the ``kassa`` command)
    first adds what the working directory's ``.env`` sets and the environment does not."""
    if env_file:
        envfile.load_working_directory()
    return Settings.from_env()


class JsonFormatter(logging.Formatter):
    def __init__(self, process: str) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "process": self.process,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def setup_logging(level: str, process: str) -> None:
    """A worker's logs: JSON lines on stdout carrying the process name."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(process))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("pika").setLevel(logging.WARNING)


def start_metrics(settings: Settings) -> None:
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr="127.0.0.1")


def process_engine(
    settings: Settings, name: str, *, pool_size: int, pre_ping: bool = True, url: str | None = None
) -> Engine:
    """An engine on ``url`` (default DATABASE_URL) named ``kassa-<name>`` in ``pg_stat_activity``."""
    kwargs = {} if pre_ping else {"pre_ping": False}  # a web checkout is a request: see kassa_common.db
    return make_engine(url or settings.database_url, pool_size=pool_size, application_name=f"kassa-{name}", **kwargs)


def wire(
    settings: Settings, name: str, *, engine: Engine | None = None, pool_size: int = 2, pre_ping: bool = True
) -> Worker:
    """The dependencies of process ``name``, without touching logging, metrics or signals.

    In-process builders (tests, benchmarks) use this; pass ``engine`` to share one.
    """
    engine = engine or process_engine(settings, name, pool_size=pool_size, pre_ping=pre_ping)
    return Worker(name, settings, engine, make_session_factory(engine), topology.named(settings.bus_prefix))


def bootstrap(
    settings: Settings | None,
    name: str,
    *,
    pool_size: int = 2,
    logs: Literal["json", "plain"] = "json",
    metrics: bool = True,
    engine: Engine | None = None,
    pre_ping: bool = True,
) -> Worker:
    """Set up process ``name``: settings (``None``: from the environment), logs (a worker's
    JSON lines, or the web's plain ones), metrics on METRICS_PORT (a worker's), then :func:`wire`."""
    settings = settings or load_settings()
    if logs == "json":
        setup_logging(settings.log_level, name)
    else:
        logging.basicConfig(level=settings.log_level)
    if metrics:
        start_metrics(settings)
    return wire(settings, name, engine=engine, pool_size=pool_size, pre_ping=pre_ping)
