"""The reference for the API benchmark: a bare Flask endpoint on the same gunicorn."""
from flask import Flask, request

app = Flask(__name__)


@app.post("/v1/api/payments")
def bare():
    request.get_json()
    return {"success": True, "statusCode": 201, "data": {"ok": True}}, 201
