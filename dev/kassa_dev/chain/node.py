"""Starting and probing a local anvil node."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

from .constants import CHAIN_ID, DEFAULT_HOST, DEFAULT_PORT, DEV_CHAIN_IDS
from .errors import DevChainError
from .paths import anvil_binary


def _rpc_call(url: str, method: str, params: list | None = None, timeout: float = 1.0):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []})
    request = urllib.request.Request(
        url, data=body.encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def rpc_answers(url: str, timeout: float = 1.0) -> bool:
    """True if an Ethereum JSON-RPC endpoint at ``url`` answers eth_chainId."""
    try:
        reply = _rpc_call(url, "eth_chainId", timeout=timeout)
    except (OSError, ValueError, urllib.error.URLError):
        return False
    return isinstance(reply, dict) and "result" in reply


def rpc_chain_id(url: str, timeout: float = 1.0) -> int:
    reply = _rpc_call(url, "eth_chainId", timeout=timeout)
    return int(reply["result"], 16)


def start_anvil(
    port: int = DEFAULT_PORT,
    *,
    block_time: float | None = None,
    repo_root: str | os.PathLike[str] | None = None,
    host: str = DEFAULT_HOST,
    extra_args: Sequence[str] = (),
    timeout: float = 30.0,
    chain_id: int = CHAIN_ID,
) -> subprocess.Popen:
    """Start anvil (chain id 31337 unless ``chain_id`` says 31338, silent) and return once its
    RPC answers.

    ``block_time=None`` keeps anvil's automine (one block per transaction, and
    ``evm_mine``/``anvil_mine`` for empty blocks); a number mines every that many
    seconds. The returned Popen has an extra attribute ``rpc_url``. Stop it with
    :func:`stop_anvil`. Raises :class:`DevChainError` if the port is already
    answering, anvil exits, or it does not answer within ``timeout`` seconds.
    """
    if chain_id not in DEV_CHAIN_IDS:
        raise ValueError(f"chain_id must be one of {DEV_CHAIN_IDS}")
    url = f"http://{host}:{port}"
    if rpc_answers(url, timeout=0.5):
        raise DevChainError(f"something already answers JSON-RPC at {url}; not starting anvil")
    args = [
        str(anvil_binary(repo_root)),
        "--host",
        host,
        "--port",
        str(port),
        "--chain-id",
        str(chain_id),
        "--silent",
    ]
    if block_time is not None:
        if block_time <= 0:
            raise ValueError("block_time must be positive (or None for automine)")
        args += ["--block-time", f"{block_time:g}"]
    args += list(extra_args)

    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the node writes to it while it runs
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    proc.rpc_url = url  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    try:
        while True:
            code = proc.poll()
            if code is not None:
                stderr.seek(0)
                detail = stderr.read().decode(errors="replace").strip()
                raise DevChainError(f"anvil exited with code {code} on {url}: {detail or 'no output'}")
            if rpc_answers(url, timeout=0.5):
                answered = rpc_chain_id(url)
                if answered != chain_id or proc.poll() is not None:
                    raise DevChainError(f"unexpected node at {url} (chain id {answered})")
                return proc
            if time.monotonic() > deadline:
                raise DevChainError(f"anvil did not answer at {url} within {timeout:g}s")
            time.sleep(0.05)
    except BaseException:
        stop_anvil(proc)
        raise
    finally:
        stderr.close()


def stop_anvil(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """Terminate an anvil started by :func:`start_anvil` (kill if it lingers)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
