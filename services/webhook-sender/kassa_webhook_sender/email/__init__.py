"""The email channel (the notifier process): emails about payment events, sent from the
outbox's events, never in a request.

``intake`` turns a ``payment.completed`` / ``payment.partially_paid`` /
``payment.late_payment`` event into rendered ``notifications`` rows (``render``), in the
consumer's transaction; ``channel`` claims those rows one at a time for the outbound engine
and sends them through ``smtp``; ``main`` wires the notifier process.
"""
