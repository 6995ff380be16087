"""The outbound engine: what Kassa sends out of the house, each channel with its intake
(events into rows, in the consumer's transaction), its sender (claim a due row, send,
record the attempt, retry later) and its own process (Procfile line) so they scale apart:

- ``webhooks``: signed HTTP deliveries to the merchant's endpoints (``webhook-sender``:
  ``python -m kassa_webhook_sender webhooks``);
- ``email``: notifications by SMTP (``notifier``: ``python -m kassa_webhook_sender email``).
"""
