"""``make run``: migrate, start the local EVM chain if none answers (with the dev tokens and
the forwarder factory) and the Litecoin regtest node of LOCAL_LITECOIN (``kassa_dev.litecoin``;
left off, with a notice, where litecoind is not installed), write the development settings
to ``.env`` (so ``kassa`` in a second terminal sees them), then every process of the
Procfile in the foreground (Ctrl-C stops them all)."""

from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path

import requests
from honcho.manager import Manager
from honcho.printer import Printer
from web3 import Web3

from kassa_common import envfile
from kassa_common.config import Settings
from kassa_common.migrate import upgrade
from kassa_dev import chain, litecoin, procfile
from kassa_sweeper.deploy import deploy_factory
from kassa_sweeper.txs import Signer

DEV_DEFAULTS = {
    "KASSA_ENV": "development",  # the built-in SECRET_KEY and, with a warning, published test keys in live mode
    "FIXED_RATES_ALLOW_LIVE": "true",  # live payments on the local chain priced by FIXED_RATES (coins and EUR, GBP…)
    "WEBHOOK_ALLOW_PRIVATE_URLS": "true",  # the development stack delivers to local receivers
    "LOCAL_EVM_RPC_URL": "http://127.0.0.1:8545",
    "LOCAL_LITECOIN_RPC_URL": f"http://{litecoin.RPC_USER}:{litecoin.RPC_PASSWORD}@127.0.0.1:{litecoin.DEFAULT_RPC_PORT}",
    "SWEEPER_PRIVATE_KEY": chain.SWEEPER_PRIVATE_KEY,  # anvil's last default account pays the sweeps' gas
    "SWEEP_INTERVAL_SECONDS": "2",
    "PYTHONUNBUFFERED": "1",
}

# The variables of the environment that are Kassa settings (docs/settings.md), written to
# .env beside DEV_DEFAULTS; process plumbing (PATH, BIND, METRICS_PORT, …) is not.
SETTING = re.compile(
    r"^(DATABASE_URL|DATABASE_READ_URL|RABBITMQ_URL|REDIS_URL|PUBLIC_API_URL|CHECKOUT_URL|DASHBOARD_URL|SECRET_KEY|KASSA_ENV"
    r"|PAYMENT_LIFETIME_MINUTES|RATE_LIMIT_PER_MINUTE|PUBLIC_CREATE_PER_MINUTE|TRUSTED_PROXIES"
    r"|IDEMPOTENCY_TTL_HOURS|TEST_MODE_COMPLETE_SECONDS|WEBHOOK_\w+|FIXED_RATES\w*|RATES_\w+|STABLECOIN_\w+"
    r"|DB_POOL_SIZE"
    r"|SETTLER_CONSUMERS|LOG_LEVEL|BUS_PREFIX|SMTP_\w+|SWEEP\w+|CHAIN_WATCHER_\w+"
    r"|\w+_RPC_URLS?|\w+_RPC_QUORUM|\w+_CONFIRMATIONS)$"
)
ENV_FILE_HEADER = """The development settings of `make run`, rewritten at each start (do not edit: set a
variable in the environment instead). The kassa command reads this file from the working
directory, the environment winning, so it sees the stack's settings in a second terminal."""


def dev_settings(env: dict[str, str], settings: Settings) -> dict[str, str]:
    """What ``make run`` writes to ``.env``: its development defaults and every Kassa setting
    of the environment (the environment's value winning), the database and broker resolved."""
    values = {k: env[k] for k in DEV_DEFAULTS if k != "PYTHONUNBUFFERED" and k in env}  # LOCAL_LITECOIN may be off
    values.update({"DATABASE_URL": settings.database_url, "RABBITMQ_URL": settings.rabbitmq_url})
    values.update({k: v for k, v in sorted(env.items()) if SETTING.match(k)})
    return values


def start_local_chain(env: dict[str, str], root: Path):
    """Start anvil (1 s blocks) unless LOCAL_EVM_RPC_URL already answers; deploy the dev tokens
    and the forwarder factory (both idempotent), the factory paid by the sweeper key."""
    url = env["LOCAL_EVM_RPC_URL"]
    proc = None
    if not chain.rpc_answers(url):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        proc = chain.start_anvil(port, block_time=1, repo_root=root)
        print(f"kassa: started anvil on {url} (chain id 31337, 1 s blocks)", flush=True)
    w3 = Web3(Web3.HTTPProvider(url))
    tokens = chain.deploy_dev_tokens(w3, repo_root=root)
    print(f"kassa: LOCAL_EVM dev tokens USDC {tokens['USDC']} USDT {tokens['USDT']}", flush=True)
    factory, _ = deploy_factory(w3, Signer(env["SWEEPER_PRIVATE_KEY"]))
    print(f"kassa: LOCAL_EVM forwarder factory {factory}", flush=True)
    return proc


def start_local_litecoin(env: dict[str, str]) -> litecoin.Litecoind | None:
    """Start litecoind -regtest (a fresh chain in a temporary directory, its wallet funded)
    unless LOCAL_LITECOIN_RPC_URL already answers; without litecoind, LOCAL_LITECOIN is left
    off (its URL dropped from ``env``) with a notice."""
    url = env["LOCAL_LITECOIN_RPC_URL"]
    if litecoin.answers(url):
        return None
    try:
        node = litecoin.start_litecoind(int(url.rsplit(":", 1)[1].split("/")[0]))
        litecoin.prepare(node)
    except litecoin.LitecoindError as exc:
        env.pop("LOCAL_LITECOIN_RPC_URL")
        print(f"kassa: LOCAL_LITECOIN is off: {exc}", flush=True)
        return None
    print(f"kassa: started litecoind -regtest on port {node.rpc_port} (LOCAL_LITECOIN, MWEB active)", flush=True)
    return node


def announce_ready(settings: Settings, stop: threading.Event) -> None:
    base = settings.checkout_url
    while not stop.is_set():
        try:
            if requests.get(f"{base}/readyz", timeout=1).ok:
                print(
                    f"kassa: ready on {base} (API {settings.public_api_url}, docs {settings.public_api_url}/docs, "
                    f"dashboard {settings.dashboard_url}); Ctrl-C stops everything",
                    flush=True,
                )
                return
        except requests.RequestException:
            pass
        stop.wait(0.5)


def main() -> int:
    root = chain.find_repo_root()
    env = {**DEV_DEFAULTS, **os.environ}
    settings = Settings.from_env(env)
    upgrade(settings.database_url)
    print("kassa: database migrated", flush=True)
    anvil = start_local_chain(env, root) if env.get("KASSA_NO_CHAIN") != "1" else None
    litecoind = start_local_litecoin(env) if env.get("KASSA_NO_CHAIN") != "1" else None
    envfile.write(Path.cwd() / envfile.DEFAULT_PATH, dev_settings(env, settings), ENV_FILE_HEADER)
    print(f"kassa: development settings written to {envfile.DEFAULT_PATH} (for kassa in another terminal)", flush=True)
    env = procfile.with_this_python(env)
    manager = Manager(Printer(sys.stdout))
    for process in procfile.read(root / "Procfile"):
        manager.add_process(process.name, process.command, env=env, cwd=str(root))
    stop = threading.Event()
    threading.Thread(target=announce_ready, args=(settings, stop), daemon=True).start()
    try:
        manager.loop()
    finally:
        stop.set()
        if anvil is not None:
            anvil.terminate()
            anvil.wait(5)
        if litecoind is not None:
            litecoind.stop()
    return manager.returncode or 0


if __name__ == "__main__":
    sys.exit(main())
