"""New blocks pushed by the node: ``eth_subscribe("newHeads")`` over WebSocket
(``<NETWORK>_WS_URL``; a development chain's is its RPC URL with ``ws://``).

The subscription only wakes the scanner, which still reads blocks by number from its
cursor: a head the subscription never delivered (a dropped connection, a node that
skipped one, a restart) is read all the same at the next wake or poll, so nothing is
ever lost to it. While it is up, the watcher polls only as a safety net (every block
time); while it is down (refused, closed, never offered) the watcher polls at its usual
pace and the subscription is tried again with a backoff. Each wake is a ``set()`` of the
event the watcher's loop waits on; a closed subscription sets it too, so the loop looks
at once and goes back to polling.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection, connect

from kassa_common.chains.rpc import redact
from kassa_common.transient import Backoff

log = logging.getLogger("kassa.chain_watcher")
OPEN_TIMEOUT = 5.0  # seconds to connect and subscribe  # pragma: no mutate


class HeadSubscription:
    """Follows ``url``'s new heads in a thread of its own, setting ``wake`` at each one.
    ``live`` is set while the subscription stands."""

    def __init__(self, name: str, url: str, wake: threading.Event) -> None:
        self.name, self.url, self.wake = name, url, wake
        self.live = threading.Event()
        self.heads = 0  # heads received (tests, logs)
        self._stopping = threading.Event()
        self._conn: ClientConnection | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> HeadSubscription:
        self._thread = threading.Thread(target=self._run, name=f"heads-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        conn = self._conn
        if conn is not None:
            conn.close()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        backoff = Backoff(initial=1.0)
        failing = False
        while not self._stopping.is_set():
            try:
                self._follow()
                backoff.reset()
                failing = False
            except (OSError, WebSocketException, ValueError, TimeoutError) as exc:
                if not failing:
                    log.warning(
                        "%s: no new-heads subscription at %s (%s); polling until it is back",
                        self.name,
                        redact(self.url),
                        exc,
                    )
                failing = True
            finally:
                self._conn = None
                if self.live.is_set():
                    self.live.clear()
                    self.wake.set()  # the loop looks now, and polls from here on
            self._stopping.wait(backoff.next())

    def _follow(self) -> None:
        with connect(self.url, open_timeout=OPEN_TIMEOUT, proxy=None, compression=None) as conn:
            self._conn = conn
            if self._stopping.is_set():
                return
            conn.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}))
            answer: dict[str, Any] = json.loads(conn.recv(timeout=OPEN_TIMEOUT))
            if "result" not in answer:
                raise ValueError(f"eth_subscribe refused: {answer.get('error')}")
            self.live.set()
            self.wake.set()  # a block may have come while it was down: look now
            log.info("%s: following new heads at %s", self.name, redact(self.url))
            for message in conn:
                if json.loads(message).get("method") == "eth_subscription":
                    self.heads += 1
                    self.wake.set()
