"""The test receiver itself (kassa_dev.receiver): a real HTTP server that other suites, the
benchmark and the chaos harness trust."""

from __future__ import annotations

import socket
import threading
import time

import requests

from tests.support.receiver import Receiver


def test_a_burst_of_new_connections_is_accepted_at_once():
    """A sender opening its whole pool at once must not wait out SYN retransmissions (1 s, 3 s…)
    behind a short listen backlog."""
    receiver = Receiver()
    port = receiver.server.server_port
    waits: list[float] = []

    def connect_and_post() -> None:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            waits.append(time.monotonic() - started)
            sock.sendall(b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            sock.recv(1024)

    try:
        threads = [threading.Thread(target=connect_and_post) for _ in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(waits) == 64 and max(waits) < 0.5, sorted(waits)[-5:]
        assert receiver.count() == 64
    finally:
        receiver.close()


def test_it_records_and_answers_and_fails_on_request():
    receiver = Receiver()
    try:
        receiver.fail(1, status=503)
        first = requests.post(receiver.url, data=b'{"event":"a","data":{}}', timeout=5)
        second = requests.post(receiver.url, data=b'{"event":"b","data":{}}', timeout=5)
        assert (first.status_code, second.status_code) == (503, 200)
        assert [h.status for h in receiver.all()] == [503, 200]
        assert [h.json["event"] for h in receiver.all()] == ["a", "b"] and receiver.events("b")[0].path == "/hooks"
    finally:
        receiver.close()


def test_failures_for_one_event_are_not_used_up_by_another():
    """Two events in flight to one receiver: failures meant for one must not land on the other."""
    receiver = Receiver()
    try:
        receiver.fail(1, event="payment.created")
        other = requests.post(
            receiver.url,
            data=b'{"event":"payment.completed","data":{}}',
            headers={"X-Kassa-Event": "payment.completed"},
            timeout=5,
        )
        meant = requests.post(
            receiver.url,
            data=b'{"event":"payment.created","data":{}}',
            headers={"X-Kassa-Event": "payment.created"},
            timeout=5,
        )
        assert (other.status_code, meant.status_code) == (200, 500)
    finally:
        receiver.close()


def test_a_request_whose_sender_died_before_its_body_is_not_a_delivery():
    """A sender killed between the headers and the body (make chaos, the e2e kill tests) sent
    no webhook: the receiver must not record it (nor trip over an empty body later)."""
    receiver = Receiver()
    try:
        with socket.create_connection(("127.0.0.1", receiver.server.server_port), timeout=10) as sock:
            sock.sendall(b'POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"id":')
        r = requests.post(receiver.url, json={"id": "evt_1", "event": "payment.completed"}, timeout=10)
        assert r.status_code == 200
        assert [h.json["id"] for h in receiver.all()] == ["evt_1"]
    finally:
        receiver.close()


def test_while_down_it_answers_503_to_everything_and_keeps_its_failures():
    """make chaos takes the merchant's endpoint down for a while: every request meanwhile gets a
    503 (recorded with it), and failures asked for before are still there once it is back."""
    receiver = Receiver()
    try:
        receiver.fail(1, status=500)
        receiver.down.set()
        during = [requests.post(receiver.url, json={"event": "a", "data": {}}, timeout=5) for _ in range(2)]
        receiver.down.clear()
        after = [requests.post(receiver.url, json={"event": "b", "data": {}}, timeout=5) for _ in range(2)]
        assert [r.status_code for r in during + after] == [503, 503, 500, 200]
        assert [h.status for h in receiver.all()] == [503, 503, 500, 200]
    finally:
        receiver.close()
