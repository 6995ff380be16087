wrk.method = "POST"
wrk.body = '{"amount": 12.5, "token": "USDC", "network": "BASE", "metadata": {"order": "bench"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = os.getenv("KASSA_BENCH_KEY") or ""
