"""The api service's processes besides the web app.

The api service owns payment state, so the two workers that change or publish it live
here: ``python -m kassa_api.workers.relay`` publishes committed outbox rows, and
``python -m kassa_api.workers.settler`` applies chain transfer reports to payments.
Neither is imported by the web app; each runs as its own process (see the Procfile).
"""
