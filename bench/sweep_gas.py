"""Gas of sweeping forwarder deposits, measured on anvil: ``python -m bench.sweep_gas``.

Each scenario flushes ``n`` deposits in one ``flushMany`` from the sweeper's account and
reports the gas per deposit. Deposits hold what customers paid; each settlement address
already holds some of every token (as a merchant's does after its first sweep), so a
sweep pays for updating balances, not for creating them. Results go to
bench/results/sweep_gas.json and a table on stdout. Gas is deterministic: what it costs
in money is gas times the network's gas price.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
from pathlib import Path

from web3 import Web3

from kassa_common.chains import forwarder
from kassa_dev import chain as devchain
from kassa_sweeper.deploy import deploy_factory
from kassa_sweeper.txs import Signer

RESULTS = Path(__file__).resolve().parent / "results" / "sweep_gas.json"
USDC, ETH = 10**6, 10**18
# name: (tokens each deposit holds, deposits per flushMany, already deployed, one merchant for all)
SCENARIOS = [
    ("USDC, first sweep (clone deployed)", ("USDC",), 1, False, False),
    ("USDC, first sweep (clone deployed)", ("USDC",), 10, False, False),
    ("USDC, first sweep (clone deployed)", ("USDC",), 50, False, False),
    ("USDC, first sweep, one merchant", ("USDC",), 10, False, True),
    ("ETH, first sweep", ("ETH",), 1, False, False),
    ("ETH, first sweep", ("ETH",), 10, False, False),
    ("USDC + USDT + ETH, first sweep", ("USDC", "USDT", "ETH"), 1, False, False),
    ("USDC + USDT + ETH, first sweep", ("USDC", "USDT", "ETH"), 10, False, False),
    ("USDC, later sweep (clone exists)", ("USDC",), 1, True, False),
    ("USDC, later sweep (clone exists)", ("USDC",), 10, True, False),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fund(w3: Web3, tokens: dict[str, str], to: str, symbols) -> None:
    for symbol in symbols:
        devchain.pay(
            w3, to=to, amount_base_units=ETH // 100 if symbol == "ETH" else USDC, token_contract=tokens.get(symbol)
        )


def measure(w3: Web3, factory, tokens: dict[str, str], symbols, n: int, deployed: bool, one_merchant: bool) -> int:
    sweeper = Web3.to_checksum_address(Signer(devchain.SWEEPER_PRIVATE_KEY).address)
    settlements = [Web3.to_checksum_address("0x" + secrets.token_hex(20)) for _ in range(1 if one_merchant else n)]
    for s in settlements:
        fund(w3, tokens, s, ("USDC", "USDT", "ETH"))
    deposits = [(settlements[i % len(settlements)], secrets.token_bytes(32)) for i in range(n)]
    listed = [tokens[s] for s in symbols if s != "ETH"]
    for settlement, salt in deposits:
        if deployed:
            factory.functions.deploy(settlement, salt).transact({"from": sweeper})
        fund(w3, tokens, forwarder.deposit_address(factory.address, settlement, salt), symbols)
    tx = factory.functions.flushMany([(s, salt, listed) for s, salt in deposits]).transact({"from": sweeper})
    receipt = w3.eth.wait_for_transaction_receipt(tx)
    assert receipt["status"] == 1
    return receipt["gasUsed"]


def main() -> int:
    proc = devchain.start_anvil(free_port())
    try:
        w3 = Web3(Web3.HTTPProvider(proc.rpc_url))
        tokens = devchain.deploy_dev_tokens(w3)
        address, _ = deploy_factory(w3, Signer(devchain.SWEEPER_PRIVATE_KEY))
        factory = w3.eth.contract(address=address, abi=forwarder.artifact("ForwarderFactory")["abi"])
        rows = []
        for name, symbols, n, deployed, one in SCENARIOS:
            gas = measure(w3, factory, tokens, symbols, n, deployed, one)
            rows.append({"scenario": name, "deposits": n, "gas": gas, "gas_per_deposit": gas // n})
    finally:
        devchain.stop_anvil(proc)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"factory": address, "rows": rows}, indent=1) + "\n")
    print(f"{'scenario':40} {'deposits':>8} {'gas':>10} {'per deposit':>12}")
    for r in rows:
        print(f"{r['scenario']:40} {r['deposits']:>8} {r['gas']:>10} {r['gas_per_deposit']:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
