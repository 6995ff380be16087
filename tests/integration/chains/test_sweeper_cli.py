"""`kassa contracts deploy` and `kassa sweep`, run through the operator CLI in-process
(the acceptance test runs `kassa sweep` as a real subprocess)."""

from __future__ import annotations

import json

import pytest

from kassa_common.chains import forwarder
from kassa_common.timefmt import utcnow
from kassa_dev import chain as devchain
from tests.support.anvil import start_chain
from tests.support.cli import cli_runner
from tests.support.sweeper import live_payment, paid, reset_sweeps, settling_merchant, sweeps_since

USDC = 10**6


@pytest.fixture(scope="module")
def bare_chain():
    """A fresh anvil without the factory (automine)."""
    c = start_chain()
    yield c
    devchain.stop_anvil(c.proc)


@pytest.fixture
def kassa(database_url, monkeypatch, capsys, bare_chain):
    env = {
        "DATABASE_URL": database_url,
        "LOCAL_EVM_RPC_URL": bare_chain.url,
        "SWEEPER_PRIVATE_KEY": devchain.SWEEPER_PRIVATE_KEY,
        "SWEEP_MAX_SPEND_USD_PER_HOUR": "1000000000",
    }
    return cli_runner(monkeypatch, capsys, env)


def test_contracts_deploy_puts_the_factory_where_networks_json_says_once(kassa, bare_chain):
    assert bare_chain.w3.eth.get_code(forwarder.factory_address()) == b""
    code, out, err = kassa("--json", "contracts", "deploy", "--network", "local_evm")
    assert code == 0, err
    first = json.loads(out)
    assert first["factory"] == forwarder.factory_address() and first["deployed"] is True
    assert bare_chain.w3.eth.get_code(first["factory"]) != b""
    code, out, _ = kassa("--json", "contracts", "deploy", "--network", "LOCAL_EVM")
    assert code == 0 and json.loads(out)["deployed"] is False


@pytest.mark.parametrize(
    "args, message",
    [
        (["contracts", "deploy", "--network", "BITCOIN"], "not an EVM network"),
        (["contracts", "deploy", "--network", "BASE"], "set BASE_RPC_URL"),
        (["sweep", "--network", "NOPE"], "not an EVM network"),
        (["sweep", "--network", "LOCAL_EVM", "--email", "nobody@example.com", "--dry-run"], "no merchant"),
    ],
)
def test_bad_networks_and_merchants_are_refused_with_the_reason(kassa, args, message):
    code, _, err = kassa(*args)
    assert code == 1 and message in err


def test_without_a_key_nothing_is_deployed_or_swept(kassa, monkeypatch):
    monkeypatch.delenv("SWEEPER_PRIVATE_KEY")
    code, _, err = kassa("contracts", "deploy", "--network", "LOCAL_EVM")
    assert code == 1 and "--private-key" in err
    code, _, err = kassa("sweep", "--network", "LOCAL_EVM")
    assert code == 1 and "SWEEPER_PRIVATE_KEY" in err


def test_a_dry_run_shows_what_would_move_and_moves_nothing(kassa, bare_chain, client, make_merchant, sessions):
    kassa("contracts", "deploy", "--network", "LOCAL_EVM")
    reset_sweeps(sessions)
    merchant = settling_merchant(make_merchant, sessions)
    p = live_payment(client, merchant, 4)
    paid(bare_chain, sessions, p, 4 * USDC)
    started = utcnow()

    code, out, err = kassa("sweep", "--network", "LOCAL_EVM", "--email", merchant.email, "--dry-run")

    assert code == 0, err
    assert p["short_id"] in out and "4 USDC" in out and "would sweep 1 deposit" in out
    assert devchain.token_balance(bare_chain.w3, bare_chain.tokens["USDC"], p["address"]) == 4 * USDC
    assert sweeps_since(sessions, started) == []
