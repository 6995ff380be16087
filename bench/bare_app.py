"""The references of the API benchmark, on the API's own gunicorn configuration:

- ``/v1/api/payments``: a bare Flask endpoint (parse the JSON, answer 201);
- ``/commit/v1/api/payments``: the same, committing one row per request through psycopg2
  (a connection per worker thread, kept open): the database-bound ceiling of a create.
"""

import json
import os
import threading

import psycopg2
from flask import Flask, request

app = Flask(__name__)
_local = threading.local()


def _connection():
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = psycopg2.connect(os.environ["DATABASE_URL"])  # bench/api.py made the table
    return conn


@app.post("/v1/api/payments")
def bare():
    request.get_json()
    return {"success": True, "statusCode": 201, "data": {"ok": True}}, 201


@app.post("/commit/v1/api/payments")
def bare_commit():
    body = request.get_json()
    conn = _connection()
    with conn, conn.cursor() as cur:  # one transaction, committed on leaving the block
        cur.execute("INSERT INTO bench_rows (body) VALUES (%s) RETURNING id", (json.dumps(body),))
        row_id = cur.fetchone()[0]
    return {"success": True, "statusCode": 201, "data": {"id": row_id}}, 201
