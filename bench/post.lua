-- POST /payments with a test key; every second request carries an Idempotency-Key
-- (fresh each time, so each creates a payment, as a merchant's retry-safe client does).
wrk.method = "POST"
wrk.body = '{"amount": 12.5, "token": "USDC", "network": "BASE", "metadata": {"order": "bench"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = os.getenv("KASSA_BENCH_KEY") or ""

local counter = 0
local thread_tag = tostring(math.random(1, 1e9))

request = function()
  counter = counter + 1
  local headers = {}
  for k, v in pairs(wrk.headers) do headers[k] = v end
  if counter % 2 == 0 then
    headers["Idempotency-Key"] = "bench-" .. thread_tag .. "-" .. counter
  end
  return wrk.format(nil, nil, headers, nil)
end
