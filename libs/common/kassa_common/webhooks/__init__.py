"""Webhooks, by what they are: ``endpoints`` (where a merchant wants which events, with
their API shape), ``deliveries`` (one row per event and endpoint, its attempts, redeliver and
test sends, with their API shape), ``signing`` (the ``Kassa-Signature`` header: sign the
exact bytes sent, verify with a tolerance) and ``netguard`` (which destination URLs are
allowed, and the one address a delivery connects to). The webhook-sender process sends the
deliveries."""
