"""`kassa dev listen PORT`: the receiver the README's walk-through points webhooks at.
Run as the console script, fed real HTTP deliveries signed by the sender's own signer."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from kassa_common.webhooks.signing import sign

KASSA = Path(sys.executable).with_name("kassa")
SECRET = "whsec_listen_test"
EVENT = {
    "id": "evt_1",
    "event": "payment.completed",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "test_mode": False,
    "data": {"id": "p1", "short_id": "7KQ2M9XR4T", "status": "COMPLETED", "amount": "25.00", "token": "USDC"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_listen_prints_each_delivery_and_whether_its_signature_verifies():
    port = free_port()
    env = {**os.environ, "KASSA_WEBHOOK_SECRET": SECRET}
    proc = subprocess.Popen([str(KASSA), "dev", "listen", str(port)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert "listening on http://127.0.0.1:" in proc.stdout.readline()
        body = json.dumps(EVENT).encode()
        url = f"http://127.0.0.1:{port}/hook"
        good = requests.post(url, data=body, headers={"X-Kassa-Signature": sign(SECRET, int(time.time()), body)})
        forged = requests.post(url, data=body, headers={"X-Kassa-Signature": sign("other", int(time.time()), body)})
        assert good.status_code == forged.status_code == 200
        first, second = proc.stdout.readline(), proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(10)
    assert first.startswith("POST /hook payment.completed evt_1 7KQ2M9XR4T COMPLETED 25.00 USDC")
    assert first.rstrip().endswith("signature valid")
    assert "signature INVALID: no signature matches" in second


def test_every_kassa_command_describes_itself():
    from kassa_common.cli import build_parser

    def commands(parser, path=()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield (*path, name), child
                    yield from commands(child, (*path, name))

    found = dict(commands(build_parser()))
    assert ("dev", "listen") in found and ("wallet", "set") in found and ("sweep",) in found
    assert [" ".join(path) for path, parser in found.items() if not parser.description] == []
    shown = subprocess.run([str(KASSA), "wallet", "set", "--help"], capture_output=True, text=True, check=True).stdout
    assert "set the wallet of a merchant's mode and chain" in shown
