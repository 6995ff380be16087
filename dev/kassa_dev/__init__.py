"""Kassa's development tooling, beside the product rather than inside it.

``kassa_dev.chain`` runs a local EVM chain with real ERC-20 dev stablecoins,
``kassa_dev.run`` is ``make run``'s launcher, ``kassa_dev.cli`` adds ``kassa dev ...``
to the operator CLI through the ``kassa.cli`` entry-point group, and
``kassa_dev.procfile`` reads the one process registry that the launcher, the test
stack and the compose file agree with. It may import ``kassa_common``; nothing in the
product imports it, so a production install can leave it out.
"""
