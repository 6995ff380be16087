"""What `make mutate` mutates: each module that decides money, with the tests that stand guard
over it (docs/mutation-testing.md). The driver is ``kassa_dev.mutate``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A module to mutate, with the tests that stand guard over it: ``unit`` run for every
    mutant, ``integration`` only for a mutant those let through. A module whose rules live in
    the database (the refunds') has its fast database tests first (one migrated database per
    run, each test rolled back), the slower API and page tests after them."""

    path: str  # relative to its package's parent, e.g. kassa_common/payments/settle.py
    unit: tuple[str, ...]
    integration: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path


TARGETS = (
    Target(
        "kassa_common/payments/settle.py",
        unit=("tests/unit/test_payment_transitions.py",),
        integration=(
            "tests/integration/payments/test_settlement.py",
            "tests/integration/chains/test_settlement_reorged.py",
            "tests/integration/payments/test_settled_watermark.py",
            "tests/integration/payments/test_payment_transfers.py",
            "tests/integration/payments/test_settle_batch_locks.py",
            "tests/integration/payments/test_settle_records.py",
            "tests/integration/payments/test_settle_shown_transfer.py",
            "tests/integration/payments/test_wrong_network_records.py",
        ),
    ),
    Target(
        "kassa_common/payments/watermark.py",
        unit=("tests/unit/test_chain_scanner.py",),
        integration=(
            "tests/integration/payments/test_settled_watermark.py",
            "tests/integration/payments/test_expiry.py",
        ),
    ),
    Target(
        "kassa_common/payments/transitions.py",
        unit=("tests/unit/test_payment_transitions.py",),
        integration=(
            "tests/integration/payments/test_settlement.py",
            "tests/integration/payments/test_expiry.py",
            "tests/integration/payments/test_cancel_race.py",
            "tests/integration/payments/test_transition_lock.py",
        ),
    ),
    Target(
        "kassa_chain_watcher/scanner.py",
        unit=(
            "tests/unit/test_chain_scanner_edges.py",
            "tests/unit/test_chain_scanner.py",
            "tests/unit/test_rpc_quorum.py",
        ),
    ),
    Target(
        "kassa_chain_watcher/quorum.py",
        unit=(
            "tests/unit/test_rpc_quorum_edges.py",
            "tests/unit/test_rpc_quorum.py",
            "tests/unit/test_rpc_node_settings.py",
        ),
    ),
    Target(
        "kassa_chain_watcher/evm.py",
        unit=(
            "tests/unit/test_evm_edges.py",
            "tests/unit/test_evm_logs.py",
            "tests/unit/test_evm_receipts.py",
            "tests/unit/test_rpc_resilience.py",
        ),
        integration=("tests/integration/chains/test_evm_value_that_arrived.py",),
    ),
    # The one ERC-20 Transfer decoder (the watcher's and the refund proof's), and the EVM's
    # address rules beside it.
    Target(
        "kassa_common/chains/evm.py",
        unit=(
            "tests/unit/test_token_transfer_decoder.py",
            "tests/unit/test_evm_logs.py",
            "tests/unit/test_refund_payout_reading.py",
            "tests/unit/test_networks.py",
        ),
        integration=("tests/integration/chains/test_forwarder_contracts.py",),
    ),
    Target(
        "kassa_chain_watcher/balances.py",
        unit=(
            "tests/unit/test_internal_credits_edges.py",
            "tests/unit/test_internal_credits.py",
            "tests/unit/test_evm_receipts.py",
        ),
        integration=("tests/integration/chains/test_evm_native_from_contracts.py",),
    ),
    # Pricing: what a payment asks for, and what funds that arrive late are worth.
    Target(
        "kassa_common/pricing/amounts.py",
        unit=("tests/unit/test_rates.py", "tests/unit/test_pricing_rules.py"),
    ),
    Target(
        "kassa_common/pricing/currencies.py",
        unit=("tests/unit/test_pricing_rules.py",),
        integration=("tests/integration/payments/test_pricing_sources.py",),
    ),
    Target(
        "kassa_common/pricing/combine.py",
        unit=("tests/unit/test_pricing_rules.py",),
        integration=("tests/integration/payments/test_pricing_sources.py",),
    ),
    Target(
        "kassa_common/pricing/terms.py",
        unit=("tests/unit/test_pricing_rules.py",),
        integration=("tests/integration/payments/test_pricing_sources.py",),
    ),
    Target(
        "kassa_common/pricing/arrival.py",
        unit=("tests/unit/test_pricing_rules.py",),
        integration=(
            "tests/integration/payments/test_pricing_sources.py",
            "tests/integration/payments/test_rates_under_outage.py",
        ),
    ),
    Target(
        "kassa_common/pricing/service.py",
        unit=("tests/unit/test_rate_service.py", "tests/unit/test_pricing_rules.py"),
        integration=("tests/integration/payments/test_rates_under_outage.py",),
    ),
    # Refunds: what is refundable, the claim, and which transfer pays which refund.
    Target(
        "kassa_common/payments/refunded.py",
        unit=("tests/unit/test_refund_rules.py", "tests/unit/test_payment_shape.py"),
        integration=(
            "tests/integration/refunds/test_refunds_api.py",
            "tests/integration/refunds/test_refund_totals_in_events.py",
        ),
    ),
    Target(
        "kassa_common/refunds/reorgs.py",
        unit=(),
        integration=("tests/integration/refunds/test_funds_reorged.py",),
    ),
    Target(
        "kassa_common/refunds/transitions.py",
        unit=(
            "tests/unit/test_refund_transitions.py",
            "tests/unit/test_refund_rules.py",
            "tests/integration/refunds/test_refund_transitions_db.py",
        ),
        integration=(
            "tests/integration/refunds/test_refunds_api.py",
            "tests/integration/refunds/test_refund_payout_rules.py",
            "tests/integration/refunds/test_claim_page.py",
        ),
    ),
    Target(
        "kassa_common/refunds/addresses.py",
        unit=("tests/integration/refunds/test_refund_addresses_db.py",),
        integration=(
            "tests/integration/refunds/test_refund_payout_rules.py",
            "tests/integration/refunds/test_claim_page.py",
            "tests/integration/payments/test_refund_payout_reports.py",
        ),
    ),
    # The payout tests on anvil (tests/integration/chains/test_refund_payouts*.py: a real
    # watcher and settler, minutes per run) are not among the focused tests of these two.
    Target(
        "kassa_common/refunds/payouts.py",
        unit=(
            "tests/unit/test_refund_rules.py",
            "tests/unit/test_refund_payout_refs.py",
            "tests/integration/refunds/test_refund_payouts_db.py",
        ),
        integration=(
            "tests/integration/payments/test_refund_payout_reports.py",
            "tests/integration/refunds/test_refund_payout_rules.py",
        ),
    ),
    Target(
        "kassa_common/refunds/onchain.py",
        unit=("tests/unit/test_refund_payout_reading.py", "tests/unit/test_refund_payout_refs.py"),
    ),
)
