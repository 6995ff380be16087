"""The outbound engine: what Kassa sends out of the house. One ``engine`` (intake consumer,
claim under a lease, send, record the attempt, retry or give up) over two channels, each
its own process (Procfile line) so they scale apart:

- ``webhooks``: signed HTTP deliveries to the merchant's endpoints (``webhook-sender``:
  ``python -m kassa_webhook_sender webhooks``);
- ``email``: notifications by SMTP (``notifier``: ``python -m kassa_webhook_sender email``).
"""
