-- POST /payments with a test key; every second request carries an Idempotency-Key, fresh
-- each time (so each creates a payment, as a merchant's retry-safe client does): a random tag
-- per thread and run, so neither wrk's threads nor the warm-up and the measured run share keys.
wrk.method = "POST"
wrk.body = '{"amount": 12.5, "token": "USDC", "network": "BASE", "metadata": {"order": "bench"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = os.getenv("KASSA_BENCH_KEY") or ""

local function random_tag()
  local f = assert(io.open("/dev/urandom", "rb"))
  local bytes = f:read(8)
  f:close()
  return (bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

function setup(thread)
  thread:set("thread_tag", random_tag())
end

local counter = 0

request = function()
  counter = counter + 1
  local headers = {}
  for k, v in pairs(wrk.headers) do headers[k] = v end
  if counter % 2 == 0 then
    headers["Idempotency-Key"] = "bench-" .. thread_tag .. "-" .. counter
  end
  return wrk.format(nil, nil, headers, nil)
end
