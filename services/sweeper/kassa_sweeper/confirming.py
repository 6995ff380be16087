"""What a mined sweep means, once the chain has it:

- **reverted**: it failed and cost gas (recorded, for the spending cap); its transfers are
  due again, but not in a batch as before: a batch's deposits each go alone next (SOLO),
  and a deposit that reverted alone is held;
- **confirmed** (the network's confirmation count): what the ``Flushed`` events say moved
  is recorded per payment and token (``payment.swept``), with the gas and its cost; a
  deposit that still holds what it should have given (``NotFlushed``: a token or the
  settlement address refused it) is held with that reason, its transfers still due; a
  solo deposit swept in full is free again.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from kassa_common.chains import forwarder
from kassa_common.models import Sweep
from kassa_common.pricing.amounts import units_text
from kassa_common.sweeps import Cost, HoldStatus, holds, records
from kassa_common.timefmt import utcnow
from kassa_sweeper import metrics
from kassa_sweeper.isolation import refused_reason
from kassa_sweeper.steps import Outcome, Step

if TYPE_CHECKING:
    from decimal import Decimal

    from web3 import Web3

    from kassa_common.chains.networks import Network
    from kassa_sweeper.chain import DepositChain
    from kassa_sweeper.txs import Signer

log = logging.getLogger("kassa.sweeper")


class Confirming:
    """The following half of ``engine.NetworkSweeper``."""

    if TYPE_CHECKING:  # provided by engine.NetworkSweeper
        network: Network
        chain: DepositChain
        w3: Web3
        signer: Signer | None

        def _usd(self, cost_units: int) -> Decimal | None: ...

    def _mined(self, s: Session, sweep: Sweep, receipt: dict[str, Any]) -> Step:
        tx_hash = "0x" + bytes(receipt["transactionHash"]).hex()
        if receipt["status"] != 1:
            records.reverted(sweep, tx_hash, receipt["blockNumber"], self._cost(receipt), now=utcnow())
            self._after_revert(s, sweep)
            return self._fail(s, sweep, f"{tx_hash} reverted")
        records.mined(sweep, tx_hash, receipt["blockNumber"], now=utcnow())
        confirmations = self.w3.eth.block_number - receipt["blockNumber"] + 1
        if confirmations < self.network.required_confirmations:
            return Step(Outcome.WAITING, sweep)
        return self._confirm(s, sweep, receipt)

    def _confirm(self, s: Session, sweep: Sweep, receipt: dict[str, Any]) -> Step:
        now = utcnow()
        moved_at = self.chain.moved(receipt)
        moved = {uuid.UUID(d["payment_id"]): moved_at.get(d["address"].lower(), {}) for d in sweep.deposits}
        left = self._left(sweep.deposits, moved)
        paid = records.confirmed(
            s,
            sweep,
            block_number=receipt["blockNumber"],
            cost=self._cost(receipt),
            moved=moved,
            left={uuid.UUID(d["payment_id"]): set(units) for d, units in left},
            error=_left_behind(sweep.deposits, moved),
            now=now,
        )
        self._hold_left(s, sweep, receipt, left)
        kept = {d["payment_id"] for d, _ in left}
        holds.clear(
            s,
            self.network.name,
            [uuid.UUID(d["payment_id"]) for d in sweep.deposits if d.get("solo") and d["payment_id"] not in kept],
        )
        if sweep.error:
            log.warning("%s: sweep %s left funds behind: %s", self.network.name, sweep.tx_hash, sweep.error)
        log.info(
            "%s: sweep %s confirmed: %d payment(s) swept, gas %d, cost %s wei",
            self.network.name,
            sweep.tx_hash,
            len(paid),
            sweep.gas_used,
            sweep.cost_units,
        )
        return Step(Outcome.CONFIRMED, sweep)

    def _fail(self, s: Session, sweep: Sweep, why: str) -> Step:
        released = records.failed(s, sweep, why, now=utcnow())
        log.error(
            "%s: sweep %s failed (%s); %d transfer(s) wait for the next one",
            self.network.name,
            sweep.tx_hash,
            why,
            released,
        )
        return Step(Outcome.FAILED, sweep)

    # -- holds --------------------------------------------------------------------------------
    def _after_revert(self, s: Session, sweep: Sweep) -> None:
        """A batch that reverted: each of its deposits goes alone next; one alone is held."""
        now, alone = utcnow(), sweep.deposit_count == 1
        for d in sweep.deposits:
            reason = (
                f"its sweep {sweep.tx_hash} reverted on chain (gas used {sweep.gas_used:,} of {sweep.gas_limit:,})"
                if alone
                else f"in sweep {sweep.tx_hash}, which reverted on chain"
            )
            holds.hold(
                s,
                self.network.name,
                uuid.UUID(d["payment_id"]),
                reason,
                now=now,
                sweep_id=sweep.id,
                held={k: int(v) for k, v in d["held"].items()},
                status=HoldStatus.HELD if alone else HoldStatus.SOLO,
            )
        if alone:
            metrics.HELD.labels(self.network.name).inc()
            log.error(
                "%s: deposit %s of payment %s held: its sweep %s reverted on its own",
                self.network.name,
                sweep.deposits[0]["address"],
                sweep.deposits[0]["short_id"],
                sweep.tx_hash,
            )
        else:
            log.warning(
                "%s: sweep %s reverted: its %d deposits are swept one by one next",
                self.network.name,
                sweep.tx_hash,
                sweep.deposit_count,
            )

    def _left(
        self, planned: list[dict[str, Any]], moved: dict[uuid.UUID, dict[str, int]]
    ) -> list[tuple[dict[str, Any], dict[str, int]]]:
        """The deposits that did not give all they held when planned and still hold it now
        (funds someone else flushed meanwhile are not left behind): (deposit, symbol -> units)."""
        short = [d for d in planned if any(sym not in moved[uuid.UUID(d["payment_id"])] for sym in d["held"])]
        if not short:
            return []
        now = self.chain.balances(d["address"] for d in short)
        out = []
        for d in short:
            still = {
                sym: now.get(d["address"].lower(), {}).get(sym, 0)
                for sym in d["held"]
                if sym not in moved[uuid.UUID(d["payment_id"])]
            }
            if still := {sym: units for sym, units in still.items() if units > 0}:
                out.append((d, still))
        return out

    def _hold_left(
        self, s: Session, sweep: Sweep, receipt: dict[str, Any], left: list[tuple[dict[str, Any], dict[str, int]]]
    ) -> None:
        if not left:
            return
        not_moved, now = self.chain.not_moved(receipt), utcnow()
        for d, units in left:
            reason = refused_reason(
                d["settlement"],
                units,
                not_moved.get(d["address"].lower(), {}),
                self.chain.native,
                self._amount,
                forwarder.NATIVE_GAS,
            )
            holds.hold(s, self.network.name, uuid.UUID(d["payment_id"]), reason, held=units, now=now, sweep_id=sweep.id)
            log.error("%s: deposit %s of payment %s held: %s", self.network.name, d["address"], d["short_id"], reason)
        metrics.HELD.labels(self.network.name).inc(len(left))

    # -- helpers ------------------------------------------------------------------------------
    def _cost(self, receipt: dict[str, Any]) -> Cost:
        units = int(receipt["gasUsed"]) * int(receipt["effectiveGasPrice"])
        return Cost(int(receipt["gasUsed"]), int(receipt["effectiveGasPrice"]), units, self._usd(units))

    def _amount(self, symbol: str, units: int) -> str:
        token = self.network.token(symbol)
        return f"{units_text(units, token.decimals)} {symbol}" if token else f"{units} {symbol} (base units)"


def _left_behind(planned: list[dict[str, Any]], moved: dict[uuid.UUID, dict[str, int]]) -> str | None:
    """What a deposit held when planned but did not move (a paused token, a blacklisted
    settlement address, a settlement contract refusing the coin): kept for the operator."""
    missing = [
        f"{d['short_id']} {symbol}"
        for d in planned
        for symbol in d["held"]
        if symbol not in moved.get(uuid.UUID(d["payment_id"]), {})
    ]
    return ("did not move: " + ", ".join(missing)) if missing else None
