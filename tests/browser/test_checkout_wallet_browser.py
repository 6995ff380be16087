""" "Pay with browser wallet" on the hosted checkout, in real Chromium against anvil: a page with
an injected EIP-1193 provider (window.ethereum, forwarding to anvil's JSON-RPC from an unlocked
account, on another chain at first) shows the button; a click asks the wallet for the payment's
chain and sends exactly what is due (an ERC-20 transfer of USDC's base units, or native ETH),
the chain watcher sees the transfer and the payment completes, and the page says so. Without a
provider the button stays hidden and the QR code and wallet link remain. Both sizes, axe-core
clean."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
import requests
from playwright.sync_api import expect

from kassa_common.accounts import keys, merchants
from kassa_common.db import make_engine, make_session_factory, unit_of_work
from kassa_dev import chain as devchain
from kassa_dev.run import DEV_DEFAULTS
from tests.conftest import fresh_database
from tests.support.anvil import start_chain
from tests.support.api import set_live_wallet
from tests.support.axe import AXE
from tests.support.bus import private_topology
from tests.support.screens import SIZES, looking
from tests.support.stack import Stack
from tests.support.wait import until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not AXE.exists(), reason="axe-core is installed by npm ci")]
CUSTOMER = 3  # anvil's account: the customer's browser wallet
PROVIDER = """
window.ethereum = {
  request: function (args) {
    return window.kassaWalletRpc(args.method, args.params || []).then(function (answer) {
      if (answer.error) { var e = new Error(answer.error.message); e.code = answer.error.code; throw e; }
      return answer.result;
    });
  }
};
"""


@pytest.fixture(scope="module")
def chain_stack(tmp_path_factory, base_env):
    """Every Procfile process but the sweeper, the chain watcher on anvil (1 s blocks)."""
    anvil = start_chain(block_time=1)
    try:
        with fresh_database("wallet_") as database_url, private_topology(base_env["RABBITMQ_URL"]) as (prefix, _):
            env = {
                **DEV_DEFAULTS,
                "DATABASE_URL": database_url,
                "RABBITMQ_URL": base_env["RABBITMQ_URL"],
                "BUS_PREFIX": prefix,
                "LOCAL_EVM_RPC_URL": anvil.url,
                "LOCAL_EVM_CONFIRMATIONS": "2",
                "DB_POOL_SIZE": "3",
            }
            logs = tmp_path_factory.mktemp("wallet-stack-logs")
            stack = Stack(env, logs)
            engine = make_engine(database_url, pool_size=2)
            try:
                stack.start_all()
                stack.start("chain-watcher")
                yield stack, anvil, make_session_factory(engine)
            finally:
                stack.stop_all()
                engine.dispose()
    finally:
        devchain.stop_anvil(anvil.proc)


@pytest.fixture(scope="module")
def shop(chain_stack) -> dict[str, str]:
    """A merchant with a live EVM wallet: its live key's headers."""
    _, _, sessions = chain_stack
    with unit_of_work(sessions) as s:
        m = merchants.create_merchant(s, f"w-{uuid.uuid4().hex[:8]}@example.com", None, "Corner Shop", True)
        key = keys.create_key(s, m.id, "live", list(keys.SCOPES)).key
        merchant_id = m.id
    set_live_wallet(sessions, merchant_id)
    return {"X-Api-Key": key}


class Wallet:
    """The browser wallet behind window.ethereum: anvil's unlocked account, on chain 1 until
    the page asks for another; records what the page asked."""

    def __init__(self, anvil) -> None:
        self.anvil, self.chain_id, self.asked = anvil, "0x1", []

    def __call__(self, method: str, params: list) -> dict:
        self.asked.append(method)
        if method in ("eth_requestAccounts", "eth_accounts"):
            return {"result": [self.anvil.accounts[CUSTOMER]]}
        if method == "eth_chainId":
            return {"result": self.chain_id}
        if method == "wallet_switchEthereumChain":
            self.chain_id = params[0]["chainId"]
            return {"result": None}
        if method == "eth_sendTransaction" and int(self.chain_id, 16) != self.anvil.w3.eth.chain_id:
            return {"error": {"code": 4901, "message": "not connected to the payment's chain"}}
        return self.anvil.w3.provider.make_request(method, params)


def create(stack, shop, **body) -> dict:
    r = requests.post(f"{stack.api}/payments", json={"network": "LOCAL_EVM", **body}, headers=shop, timeout=10)
    assert r.status_code == 201, r.text
    return r.json()["data"]


def completed(stack, shop, payment_id: str) -> bool:
    got = requests.get(f"{stack.api}/payments/{payment_id}", headers=shop, timeout=5).json()["data"]
    return got["status"] == "COMPLETED"


@pytest.mark.parametrize(("size", "token", "amount"), [("1280x800", "USDC", 3), ("390x844", "ETH", 2)])
def test_the_customer_pays_with_a_browser_wallet_and_the_payment_completes(
    chain_stack, shop, browser, screenshots, size, token, amount
):
    stack, anvil, _ = chain_stack
    p = create(stack, shop, amount=amount, token=token)
    with looking(browser, size, screenshots) as (page, look):
        wallet = Wallet(anvil)
        page.context.expose_function("kassaWalletRpc", wallet)
        page.context.add_init_script(PROVIDER)
        page.goto(p["checkout_url"])
        button = page.get_by_role("button", name="Pay with browser wallet")
        expect(button).to_be_visible()
        expect(page.locator(".qr svg")).to_be_visible()  # the QR path is kept
        expect(page.locator("#open-wallet")).to_be_visible()
        look(f"checkout-wallet-{token.lower()}")
        before = balance(anvil, token)
        button.click()
        expect(page.locator("#wallet-status")).to_contain_text("Sent: 0x", timeout=20_000)
        assert "wallet_switchEthereumChain" in wallet.asked and wallet.chain_id == hex(anvil.w3.eth.chain_id)
        until(lambda: completed(stack, shop, p["id"]), 60, message="the watcher completed the payment")
        expect(page.locator("#status-text")).to_have_text("Payment complete. Thank you!", timeout=20_000)
        look(f"checkout-wallet-{token.lower()}-paid")
    paid = requests.get(f"{stack.api}/payments/{p['id']}", headers=shop, timeout=5).json()["data"]
    assert paid["amount_received"] == paid["crypto_amount"]  # exactly what was due, not a unit more
    sent = before - balance(anvil, token)  # the native coin's also pays the gas
    due = Decimal(paid["crypto_amount"]) * 10 ** (6 if token == "USDC" else 18)
    assert sent == due if token == "USDC" else sent > due


def balance(anvil, token: str) -> int:
    account = anvil.accounts[CUSTOMER]
    if token == "ETH":
        return anvil.w3.eth.get_balance(account)
    return devchain.token_balance(anvil.w3, anvil.tokens[token], account)


@pytest.mark.parametrize("size", SIZES)
def test_without_a_browser_wallet_the_button_stays_hidden(chain_stack, shop, browser, screenshots, size):
    stack, _, _ = chain_stack
    p = create(stack, shop, amount=4, token="USDC")
    with looking(browser, size, screenshots) as (page, look):
        page.goto(p["checkout_url"])
        expect(page.locator(".qr svg")).to_be_visible()
        expect(page.locator("#open-wallet")).to_be_visible()
        expect(page.locator("#wallet-pay")).to_be_hidden()
        look("checkout-live-no-wallet")
