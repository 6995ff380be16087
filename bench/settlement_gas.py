"""Gas a settlement contract needs to take the native coin from a forwarder, measured on
anvil: ``python -m bench.settlement_gas``.

The forwarder sends the native coin with a fixed amount of gas (``Forwarder.NATIVE_GAS``),
so a settlement contract can neither burn a sweep's gas nor make it fail. This measures
what real receivers need, cold (each probe is its own transaction, as a sweep touching
the wallet for the first time): a plain account, Safe v1.4.1 (the real contracts, from
the pinned npm package) and SafeL2, a proxy shaped like Safe's, and ERC-1967 proxies over
ERC-4337-style accounts (plain, and the transparent proxy over an account that emits an
event). Results go to bench/results/settlement_gas.json and a table on stdout, with the
stipend and its headroom over the hungriest receiver.
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

from web3 import Web3

from kassa_common.chains import forwarder
from kassa_dev import chain as devchain
from tests.support import settlements
from tests.support.anvil import free_port

RESULTS = Path(__file__).resolve().parent / "results" / "settlement_gas.json"


def receivers(w3: Web3) -> list[tuple[str, str]]:
    return [
        ("an account (no code)", Web3.to_checksum_address("0x" + secrets.token_hex(20))),
        ("Safe v1.4.1 (SafeProxy → Safe)", settlements.safe(w3)),
        ("SafeL2 v1.4.1 (SafeProxy → SafeL2)", settlements.safe(w3, l2=True)),
        ("Safe-shaped proxy and singleton", settlements.safe_like(w3)),
        ("ERC-4337 account behind an ERC-1967 proxy", settlements.smart_account(w3)),
        ("ERC-4337 account emitting, transparent proxy", settlements.smart_account(w3, transparent=True)),
    ]


def main() -> int:
    proc = devchain.start_anvil(free_port())
    try:
        w3 = Web3(Web3.HTTPProvider(proc.rpc_url))
        probe = settlements.deploy(w3, "GasProbe")
        rows = [
            {"receiver": name, "gas": settlements.least_gas_to_receive(w3, probe, address)}
            for name, address in receivers(w3)
        ]
        artifact = forwarder.artifact("Forwarder")
        implementation = settlements.deploy_artifact(w3, artifact["abi"], artifact["bytecode"])
        native_gas = w3.eth.contract(address=implementation, abi=artifact["abi"]).functions.NATIVE_GAS().call()
    finally:
        devchain.stop_anvil(proc)
    hungriest = max(r["gas"] for r in rows)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"native_gas": native_gas, "rows": rows}, indent=1) + "\n")
    print(f"{'receiver':48} {'least gas on the call, cold':>28}")
    for r in rows:
        print(f"{r['receiver']:48} {r['gas']:>28,}")
    print(
        f"\nForwarder.NATIVE_GAS = {native_gas:,}: {native_gas / hungriest:.1f}x the hungriest receiver "
        "(each also gets the 2,300 a value transfer adds)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
