"""The webhook channel: ``intake`` turns payment events into delivery rows (in the consumer's
transaction); ``channel`` claims them for the outbound engine, signs and sends them through
``transport`` and records each attempt; ``main`` wires the webhook-sender process."""
