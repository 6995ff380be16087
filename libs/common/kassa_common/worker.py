"""What every worker process shares: JSON logs, Prometheus metrics, and a runner that
turns SIGTERM/SIGINT into a graceful stop (stop taking work, finish, ack, close)."""
from __future__ import annotations

import json
import logging
import signal
import sys
import threading
import time
from typing import Callable

from prometheus_client import start_http_server

from kassa_common.config import Settings

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def __init__(self, process: str) -> None:
        super().__init__()
        self.process = process

    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
               "level": record.levelname, "process": self.process, "logger": record.name, "msg": record.getMessage()}
        out.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def setup_logging(level: str, process: str) -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(process))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("pika").setLevel(logging.WARNING)


def start_metrics(settings: Settings) -> None:
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr="127.0.0.1")


def run_until_stopped(run: Callable[[], None], on_stop: Callable[[], None]) -> None:
    """Run ``run`` in the main thread; SIGTERM/SIGINT call ``on_stop`` (once)."""
    stopped = threading.Event()

    def _signal(signum, _frame) -> None:
        if not stopped.is_set():
            stopped.set()
            logging.getLogger("kassa.worker").info("stopping on signal %s", signum)
            on_stop()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    run()


def loop(tick: Callable[[], bool], stop: threading.Event, interval: float) -> None:
    """Polling workers: call ``tick`` until stopped; wait ``interval`` when it had nothing to do."""
    log = logging.getLogger("kassa.worker")
    while not stop.is_set():
        try:
            busy = tick()
        except Exception:  # noqa: BLE001 - a failed tick is logged and retried next time
            log.exception("tick failed")
            busy = False
        if not busy:
            stop.wait(interval)
