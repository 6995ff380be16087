"""The README's front door cannot rot: every shell block of "Your first payment" runs with
bash, verbatim, in a second terminal's shoes beside a `make run`-like stack (every Procfile
process, anvil with 1 s blocks, the dev tokens and the forwarder factory, the settings
`make run` writes to `.env`), and the payment completes with its webhook delivered, then is
refunded in part (claimed, paid with `kassa dev pay-refund`, completed by the watcher).

Only what a user's machine would differ in is replaced: the stack's web port for 8000 and
the test receiver for the local receiver on port 9000. Blocks share one shell, as they
share the user's terminal; each must exit 0 (``set -e``, ``pipefail``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from kassa_common import envfile
from kassa_common.config import Settings
from kassa_dev import chain as devchain
from kassa_dev.run import DEV_DEFAULTS, dev_settings
from kassa_sweeper.deploy import deploy_factory
from kassa_sweeper.txs import Signer
from tests.conftest import fresh_database
from tests.support.anvil import start_chain
from tests.support.bus import private_topology
from tests.support.receiver import Receiver
from tests.support.stack import Stack
from tests.support.wait import until

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Your first payment"
pytestmark = pytest.mark.slow


def walkthrough_blocks(readme: str) -> list[str]:
    """The ```sh blocks of the README's walk-through section, in order."""
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, flags=re.DOTALL | re.MULTILINE)


def test_the_walkthrough_has_the_steps_it_promises():
    blocks = walkthrough_blocks((ROOT / "README.md").read_text())
    text = "\n".join(blocks)
    assert len(blocks) >= 4
    for step in (
        ".venv/bin/kassa merchant create",
        ".venv/bin/kassa wallet set",
        "key create",
        "$API/webhooks",
        "$API/payments",
        ".venv/bin/kassa dev pay",
        "COMPLETED",
        "/refunds",
        ".venv/bin/kassa dev pay-refund",
        "/deliveries",
    ):
        assert step in text, step
    assert "http://127.0.0.1:8000/v1/api" in text and "http://127.0.0.1:9000/hook" in text  # what the test replaces


@pytest.fixture
def make_run_stack(tmp_path, base_env):
    """The stack as `make run` starts it, and the second terminal's working directory holding
    its `.env` and the checkout's `.venv`."""
    anvil = start_chain(block_time=1)
    try:
        deploy_factory(anvil.w3, Signer(devchain.SWEEPER_PRIVATE_KEY))
        with fresh_database("walk_") as database_url, private_topology(base_env["RABBITMQ_URL"]) as (prefix, _):
            env = {
                **DEV_DEFAULTS,
                "DATABASE_URL": database_url,
                "RABBITMQ_URL": base_env["RABBITMQ_URL"],
                "BUS_PREFIX": prefix,
                "LOCAL_EVM_RPC_URL": anvil.url,
                "DB_POOL_SIZE": "3",
            }
            (tmp_path / "logs").mkdir()
            stack = Stack(env, tmp_path / "logs")
            terminal = tmp_path / "terminal"
            terminal.mkdir()
            (terminal / ".venv").symlink_to(Path(sys.executable).parents[1])
            run_env = {**env, **{k: stack.env[k] for k in ("PUBLIC_API_URL", "CHECKOUT_URL", "DASHBOARD_URL")}}
            envfile.write(terminal / ".env", dev_settings(run_env, Settings.from_env(run_env)))  # as make run does
            try:
                stack.start_all()
                stack.start("chain-watcher")
                stack.start("sweeper")
                yield stack, terminal, anvil
            finally:
                stack.stop_all()
    finally:
        devchain.stop_anvil(anvil.proc)


def test_every_walkthrough_block_runs_and_the_payment_completes(make_run_stack):
    stack, terminal, anvil = make_run_stack
    receiver = Receiver()
    try:
        blocks = walkthrough_blocks((ROOT / "README.md").read_text())
        script = "set -eo pipefail\n" + "".join(
            f"{block.replace('http://127.0.0.1:8000', stack.base).replace('http://127.0.0.1:9000/hook', receiver.url)}"
            f"\necho '::block {i} ok'\n"
            for i, block in enumerate(blocks, 1)
        )
        user_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}  # no Kassa setting
        done = subprocess.run(
            ["bash", "-c", script], cwd=terminal, env=user_env, capture_output=True, text=True, timeout=240, check=False
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, output + stack.logs()
        for i in range(1, len(blocks) + 1):
            assert f"::block {i} ok" in done.stdout, output
        tx_hash = re.search(r"^(0x[0-9a-f]{64})$", done.stdout, flags=re.MULTILINE).group(1)
        assert anvil.w3.eth.get_transaction_receipt(tx_hash)["status"] == 1  # a real transfer on the dev chain
        assert re.search(r"^payment\.created SUCCEEDED 1 attempt", done.stdout, flags=re.MULTILINE), (
            output
        )  # the log shown
        until(lambda: receiver.events("payment.completed"), timeout=20, message="payment.completed at the receiver")
        completed = receiver.events("payment.completed")
        assert len(completed) >= 1 and completed[0].json["data"]["transaction_hash"] == tx_hash
        assert completed[0].headers["X-Kassa-Signature"].startswith("t=")
        assert {h.json["event"] for h in receiver.all()} >= {"payment.created", "payment.detected", "payment.completed"}
        refunded = until(lambda: receiver.events("refund.completed"), timeout=20, message="refund.completed")[0]
        assert refunded.json["data"]["address"] == "0x90F79bf6EB2c4f870365E785982E1f101E93b906"
        payout = refunded.json["data"]
        assert anvil.w3.eth.get_transaction(payout["transaction_hash"])["from"] == anvil.accounts[1]
        assert payout["payout_from"].lower() == anvil.accounts[1].lower()
        tag = Decimal(payout["payout_amount"]) - Decimal("2.5")
        assert Decimal("0.000001") <= tag <= Decimal("0.000999"), payout  # 1-999 base units of USDC
        assert re.search(rf"^{re.escape(payout['payout_amount'])}$", done.stdout, flags=re.MULTILINE), output
        receipt = anvil.w3.eth.get_transaction_receipt(payout["transaction_hash"])
        assert int(receipt["logs"][0]["data"].hex(), 16) == int(Decimal(payout["payout_amount"]) * 10**6)
        assert re.search(r"^2\.5$", done.stdout, flags=re.MULTILINE), output  # refunded_amount
    finally:
        receiver.close()
