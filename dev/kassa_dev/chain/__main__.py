"""Run the local dev chain: ``python -m kassa_dev.chain [--port 8545] [--block-time 1]``.

Starts anvil, deploys/mints the dev stablecoins, prints the addresses and keeps
anvil running until interrupted (SIGINT/SIGTERM). With ``--deploy-only`` it
deploys onto an anvil that is already running at ``--rpc-url`` and exits.
"""

from __future__ import annotations

import argparse
import signal
import sys

from web3 import Web3

from .constants import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_RPC_URL
from .errors import DevChainError
from .node import start_anvil, stop_anvil
from .tokens import deploy_dev_tokens


def _raise_exit(signum, _frame):
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kassa_dev.chain", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--block-time",
        type=float,
        default=1.0,
        help="seconds between blocks (default 1, like LOCAL_EVM); 0 for automine",
    )
    parser.add_argument("--deploy-only", action="store_true", help="deploy onto a running anvil and exit")
    parser.add_argument("--rpc-url", default=DEFAULT_RPC_URL, help="with --deploy-only")
    args = parser.parse_args(argv)

    try:
        if args.deploy_only:
            tokens = deploy_dev_tokens(Web3(Web3.HTTPProvider(args.rpc_url)))
            for symbol, address in tokens.items():
                print(f"{symbol} {address}", flush=True)
            return 0

        signal.signal(signal.SIGTERM, _raise_exit)
        proc = start_anvil(args.port, block_time=args.block_time or None, host=args.host)
        try:
            tokens = deploy_dev_tokens(Web3(Web3.HTTPProvider(proc.rpc_url)))
            print(f"anvil: {proc.rpc_url} (chain id 31337)", flush=True)
            for symbol, address in tokens.items():
                print(f"{symbol} {address}", flush=True)
            return proc.wait()
        except KeyboardInterrupt:
            return 130
        finally:
            stop_anvil(proc)
    except DevChainError as exc:
        print(f"dev chain: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
