"""gunicorn settings for the API (overridable with the usual GUNICORN_CMD_ARGS)."""
import multiprocessing
import os

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", str(max(2, multiprocessing.cpu_count()))))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "4"))
keepalive = 5
timeout = 30
graceful_timeout = 20
accesslog = None
