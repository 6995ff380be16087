"""Bitcoin Core's JSON of a transaction output (``getblock`` verbosity 2,
``getrawtransaction`` verbose), read alike by the watcher and the refund payouts' reader.

Nodes write an output's address two ways: Bitcoin Core 22 and later ``scriptPubKey.address``
(one string); Bitcoin Core up to 0.21 and litecoind 0.21 (the Litecoin node Debian ships)
``scriptPubKey.addresses``, a list, one entry for every standard single-key or script
output (more only for bare multisig, which pays no one address: not a transfer to one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def output_address(out: Mapping[str, Any]) -> str | None:
    """The one address an output pays, in either shape, or None (no address: OP_RETURN, a
    bare multisig, an MWEB peg-in or HogEx output)."""
    script = out.get("scriptPubKey") or {}
    address = script.get("address")
    if address:
        return str(address)
    listed = script.get("addresses")
    if isinstance(listed, list) and len(listed) == 1 and listed[0]:
        return str(listed[0])
    return None
