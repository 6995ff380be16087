"""gunicorn entrypoint: ``gunicorn kassa_api.wsgi:app``."""

from kassa_api.app import create_app

app = create_app()
