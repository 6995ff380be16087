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
# The longest request line gunicorn reads (its maximum); the application refuses URLs over
# 4 KiB itself, with a 414 in the API's error shape (kassa_api.errors.MAX_URL).
limit_request_line = 8190
