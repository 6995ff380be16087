"""Prometheus metrics of the chain watcher (served on METRICS_PORT).

Nodes are labelled by their place in ``<NETWORK>_RPC_URLS`` (``node``, from 1) and their
redacted URL (``url``: scheme, host and port; never the path or query, which may hold a key).
Alert on ``kassa_chain_deep_reorgs_total`` rising (a confirmed transfer may be lost: see the
``payment.reorged`` webhooks), on ``kassa_rpc_node_refused`` (a node on the wrong chain), and
on ``kassa_rpc_node_disagreements_total`` rising (a node that answers another block than
the others: lagging behind a reorg, or lying).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from kassa_common.chains.nodes import NODE  # the per-node metrics live with the node pool

NODE_LAG = Gauge(
    "kassa_rpc_node_lag_blocks",
    "How many blocks a node's tip was behind the reader's at the last cross-check (RPC quorum)",
    NODE,
)
NODE_DISAGREEMENTS = Counter(
    "kassa_rpc_node_disagreements_total",
    "Cross-checks in which a node answered another "
    "block hash, or not the same transfers, than the node read from (RPC quorum)",
    NODE,
)
QUORUM_WAITS = Counter(
    "kassa_rpc_quorum_waits_total",
    "Cross-checks that held confirmations back: too few nodes agreed on the block at the required depth",
    ["network"],
)
DEEP_REORGS = Counter(
    "kassa_chain_deep_reorgs_total", "Reorgs that replaced blocks already past the required confirmations", ["network"]
)
TRANSFERS_REORGED = Counter(
    "kassa_chain_transfers_reorged_total",
    "Confirmed transfers lost in a reorg deeper than the required confirmations (reported chain.transfer.reorged)",
    ["network"],
)
