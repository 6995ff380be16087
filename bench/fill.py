"""Payment rows in bulk for the database-bound scenarios: one INSERT … SELECT generate_series."""

from __future__ import annotations

import sqlalchemy as sa

FILL = sa.text("""
    INSERT INTO payments (id, short_id, merchant_id, test_mode, status, amount, token, network, decimals,
        address, checkout_url, derivation_index, crypto_amount_units, amount_received_units, exchange_rate,
        required_confirmations, metadata, expires_at, test_auto_complete)
    SELECT gen_random_uuid(), :tag || lpad(g::text, 8, '0'), :m, :test_mode, 'PENDING', 10, 'USDC', :network, 6,
        '0x' || lpad(to_hex(:base + g), 40, '0'), 'http://127.0.0.1/pay/' || g, :base + g, 10000000, 0, 1, 2, '{}',
        now() + make_interval(mins => :expires_in_minutes), false
    FROM generate_series(1, :n) g""")


def address(base: int, i: int) -> str:
    """The address ``fill`` gave row ``i`` (1-based) of a fill at ``base``."""
    return "0x" + format(base + i, "040x")


def fill(
    engine,
    merchant_id,
    n: int,
    *,
    tag: str,
    base: int,
    network: str = "LOCAL_EVM",
    test_mode: bool = False,
    expires_in_minutes: int = 60,
) -> None:
    with engine.begin() as conn:
        conn.execute(
            FILL,
            {
                "tag": tag,
                "m": merchant_id,
                "n": n,
                "base": base,
                "network": network,
                "test_mode": test_mode,
                "expires_in_minutes": expires_in_minutes,
            },
        )
        conn.execute(sa.text("ANALYZE payments"))
