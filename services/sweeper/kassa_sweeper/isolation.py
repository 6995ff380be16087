"""Which deposits of a batch to take out of it, and why (DESIGN §5: no deposit can stop the
others being swept, nor drain the key by failing again and again).

- **before sending**: a batch whose gas estimation fails is bisected through estimation
  (each half estimated on its own, down to single deposits): the deposits that fail alone
  are held with the node's reason, the rest are swept. A failure of the node itself (down,
  rate limited) is not a deposit's fault and holds nothing: only an execution failure
  (a revert, running out of gas) is.
- **after a sweep reverted on chain** (estimation passed: the chain changed meanwhile, or a
  contract behaves differently with more gas): every deposit of the batch is swept on its
  own next (``SOLO``), and one that reverts on its own is held. A bad deposit costs at most
  two reverted sweeps, ever.
- **after a confirmed sweep**: a deposit that still holds what the sweep should have moved
  (the forwarder's ``NotFlushed``: a token refused the transfer, the settlement address
  refused the native coin) is held, with that reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from web3.exceptions import ContractLogicError, Web3RPCError

# How nodes word an execution failure that is not a revert (geth, erigon, anvil, nethermind).
_EXECUTION = (
    "revert",
    "out of gas",
    "gas required exceeds",
    "exceeds block gas limit",
    "invalid opcode",
    "stack underflow",
    "stack overflow",
    "invalid jump",
)


def call_failure(exc: BaseException) -> str | None:
    """Why the call itself failed (a revert, out of gas), or None when the error is not the
    call's (the node is down, slow, rate limited, or refuses the method)."""
    if isinstance(exc, ContractLogicError):
        data = getattr(exc, "data", None)
        message = getattr(exc, "message", None) or str(exc)
        return message + (f" (data {data})" if data and data != "0x" else "")
    if isinstance(exc, Web3RPCError):
        text = str(getattr(exc, "message", None) or exc)
        if any(marker in text.lower() for marker in _EXECUTION):
            return text
    return None


def culprits(
    fails: Callable[[list[dict[str, Any]]], str | None], batch: list[dict[str, Any]], reason: str
) -> list[tuple[dict[str, Any], str]]:
    """The deposits of ``batch`` (whose estimation failed with ``reason``) that fail on their
    own, each with its reason: ``fails(deposits)`` estimates a sub-batch and returns why it
    failed, or None. Empty when every half passes alone (the batch as a whole is too big)."""
    if len(batch) == 1:
        return [(batch[0], reason)]
    middle = len(batch) // 2
    found = []
    for half in (batch[:middle], batch[middle:]):
        why = fails(half)
        if why is not None:
            found += culprits(fails, half, why)
    return found


def refused_reason(
    settlement: str,
    left: dict[str, int],
    not_moved: dict[str, int],
    native: str | None,
    text: Callable[[str, int], str],
    native_gas: int,
) -> str:
    """Why a confirmed sweep left ``left`` (symbol -> units still there) in a deposit."""
    parts = []
    for symbol, units in left.items():
        if symbol == native and symbol in not_moved:
            parts.append(
                f"the settlement address {settlement} did not take {text(symbol, units)} (its receive "
                f"reverted, or needed more than the {native_gas:,} gas the forwarder gives)"
            )
        elif symbol in not_moved:
            parts.append(
                f"{text(symbol, units)} did not move: the token refused the transfer (paused, or the "
                f"settlement address {settlement} blacklisted)"
            )
        else:
            parts.append(f"{text(symbol, units)} did not move")
    return "; ".join(parts)
