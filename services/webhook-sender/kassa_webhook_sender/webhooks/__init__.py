"""The webhook channel: ``intake`` turns payment events into delivery rows (in the consumer's
transaction), ``dispatcher`` claims due rows under a lease, sends them signed through
``transport`` and records each attempt (``store``), retrying on ``retry``'s schedule;
``main`` runs both as the webhook-sender process."""
