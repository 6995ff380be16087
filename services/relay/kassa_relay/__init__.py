"""The relay process: publishes committed outbox rows to RabbitMQ with batched confirms
(``python -m kassa_relay.main``). The relay logic is ``kassa_common``'s; this is its
entry point and wiring."""
