"""kassa-client's retries over real HTTP: a proxy in front of the running stack refuses
(429, 503 with Retry-After) or hangs up on cue, and an API with a low rate limit refuses
for real. A create keeps its Idempotency-Key across retries, so a retry never doubles a
payment; what is not safe to repeat is not repeated."""

from __future__ import annotations

import secrets
import threading
import uuid

import pytest
from werkzeug.serving import make_server

from kassa_client import (
    APIConnectionError,
    APIError,
    Kassa,
    RateLimitError,
    ServerError,
    ServiceUnavailableError,
    ValidationError,
)
from kassa_client.resources import Payments
from kassa_client.transport import Transport
from tests.support.http_faults import FORWARD_THEN_HANG_UP, HANG_UP, Answer, FaultyProxy
from tests.support.stack import free_port

CREATE = ("POST", "/v1/api/payments")


@pytest.fixture
def proxy(stack):
    p = FaultyProxy(stack.base)
    yield p
    p.close()


@pytest.fixture
def kassa(proxy, merchant):
    with Kassa(merchant.test_key, base_url=proxy.url, max_retries=3) as client:
        yield client


def creates(proxy) -> list:
    return [s for s in proxy.requests_seen() if (s.method, s.path) == CREATE]


def one_payment_for(kassa, email: str):
    page = kassa.payments.list(search=email)
    assert page.total == 1, [p.id for p in page]
    return page[0]


def test_a_create_refused_with_429_then_503_is_retried_after_retry_after_with_the_same_key(kassa, proxy):
    email = f"r-{secrets.token_hex(4)}@example.com"
    proxy.script(Answer(429, {"Retry-After": "1"}), Answer(503, {"Retry-After": "1"}))
    p = kassa.payments.create(amount=3, token="USDC", network="BASE", customer_email=email)
    sent = creates(proxy)
    assert len(sent) == 3
    keys = {s.headers["Idempotency-Key"] for s in sent}
    assert len(keys) == 1 and uuid.UUID(keys.pop())  # one generated key, on every attempt
    assert sent[1].at - sent[0].at >= 1.0 and sent[2].at - sent[1].at >= 1.0  # Retry-After honoured
    assert one_payment_for(kassa, email).id == p.id


def test_a_create_whose_answer_was_lost_is_recovered_by_its_key_not_created_twice(kassa, proxy):
    email = f"r-{secrets.token_hex(4)}@example.com"
    proxy.script(FORWARD_THEN_HANG_UP)  # the API creates the payment; the client never hears of it
    p = kassa.payments.create(amount=4, token="USDC", network="BASE", customer_email=email)
    first, retry = creates(proxy)
    assert first.headers["Idempotency-Key"] == retry.headers["Idempotency-Key"]
    assert first.upstream_headers.get("Idempotent-Replayed") is None
    assert retry.upstream_headers["Idempotent-Replayed"] == "true"  # the API answered with the first payment
    assert one_payment_for(kassa, email).id == p.id


def test_the_callers_own_key_is_the_one_retried(kassa, proxy):
    proxy.script(Answer(503, {"Retry-After": "0"}))
    kassa.payments.create(amount=1, token="USDC", network="BASE", idempotency_key="order-" + secrets.token_hex(4))
    assert len({s.headers["Idempotency-Key"] for s in creates(proxy)}) == 1 and len(creates(proxy)) == 2


def test_a_cancel_whose_answer_was_lost_is_not_sent_again(kassa, proxy):
    p = kassa.payments.create(amount=2, token="USDC", network="BASE")
    proxy.script(FORWARD_THEN_HANG_UP)
    with pytest.raises(APIConnectionError):
        kassa.payments.cancel(p.id)
    assert [s.path for s in proxy.requests_seen() if s.method == "POST"][-1].endswith("/cancel")
    assert sum(s.path.endswith("/cancel") for s in proxy.requests_seen()) == 1
    assert kassa.payments.get(p.id).status == "CANCELED"  # it did happen: a second try would have said 409


def test_a_read_whose_answer_was_lost_is_sent_again(kassa, proxy):
    p = kassa.payments.create(amount=2, token="USDC", network="BASE")
    proxy.script(HANG_UP)
    assert kassa.payments.get(p.short_id).id == p.id
    assert sum(s.path.endswith(p.short_id) for s in proxy.requests_seen()) == 2


def test_a_server_error_or_a_4xx_is_not_retried(kassa, proxy):
    proxy.script(Answer(500))
    with pytest.raises(ServerError) as caught:
        kassa.payments.create(amount=1, token="USDC", network="BASE")
    assert caught.value.status == 500 and len(creates(proxy)) == 1
    with pytest.raises(ValidationError):
        kassa.payments.create(amount=0, token="USDC", network="BASE")
    assert len(creates(proxy)) == 2


def test_with_retries_off_the_first_refusal_is_raised_with_its_retry_after(proxy, merchant):
    proxy.script(Answer(503, {"Retry-After": "7"}))
    with (
        Kassa(merchant.test_key, base_url=proxy.url, max_retries=0) as kassa,
        pytest.raises(ServiceUnavailableError) as caught,
    ):
        kassa.payments.list()
    assert caught.value.retry_after == 7.0 and caught.value.code == "SERVICE_UNAVAILABLE"
    assert len(proxy.requests_seen()) == 1


def test_a_retry_after_beyond_a_minute_is_raised_not_waited_for(kassa, proxy):
    proxy.script(Answer(429, {"Retry-After": "120"}))
    with pytest.raises(RateLimitError) as caught:
        kassa.payments.list()
    assert caught.value.retry_after == 120.0 and len(proxy.requests_seen()) == 1


def test_retries_stop_after_max_retries(proxy, merchant):
    proxy.script(*[Answer(503, {"Retry-After": "0"})] * 3)
    with Kassa(merchant.test_key, base_url=proxy.url, max_retries=2) as kassa, pytest.raises(ServiceUnavailableError):
        kassa.payments.list()
    assert len(proxy.requests_seen()) == 3


def test_a_connection_never_opened_is_retried_even_for_a_cancel(merchant):
    waits: list[float] = []
    transport = Transport(
        api_key=merchant.test_key,
        base_url=f"http://127.0.0.1:{free_port()}/v1/api",
        timeout=5,
        max_retries=2,
        sleep=waits.append,
    )
    with pytest.raises(APIConnectionError):
        Payments(transport).cancel("7KQ2M9XR4T")
    assert len(waits) == 2  # nothing listened: the request never left, so it was safe to send again


def test_a_cancel_hung_up_on_is_not_retried_by_the_transport(proxy, merchant):
    waits: list[float] = []
    transport = Transport(api_key=merchant.test_key, base_url=proxy.url, timeout=5, max_retries=2, sleep=waits.append)
    proxy.script(HANG_UP)
    with pytest.raises(APIConnectionError):
        Payments(transport).cancel("7KQ2M9XR4T")
    assert waits == [] and len(proxy.requests_seen()) == 1


def test_a_redirect_is_not_followed_so_the_key_goes_nowhere_else(kassa, proxy, receiver):
    proxy.script(Answer(307, {"Location": receiver.url}))
    with pytest.raises(APIError) as caught:
        kassa.payments.create(amount=1, token="USDC", network="BASE")
    assert caught.value.status == 307 and receiver.url in caught.value.message
    assert len(creates(proxy)) == 1 and receiver.count() == 0


def test_one_client_serves_many_threads(kassa):
    email = f"t-{secrets.token_hex(4)}@example.com"
    made: list[str] = []

    def create() -> None:
        for _ in range(5):
            made.append(kassa.payments.create(amount=1, token="USDC", network="BASE", customer_email=email).id)

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(set(made)) == 30
    assert {p.id for p in kassa.payments.iterate(search=email)} == set(made)


@pytest.fixture
def limited_api(base_env, stack_database_url):
    """The API with a rate limit of 2 requests a minute per key, on a real local HTTP server."""
    from kassa_common.config import Settings
    from kassa_api.app import create_app

    settings = Settings.from_env({**base_env, "DATABASE_URL": stack_database_url, "RATE_LIMIT_PER_MINUTE": "2"})
    server = make_server("127.0.0.1", 0, create_app(settings), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1/api"
    server.shutdown()


def test_the_apis_own_rate_limit_is_a_rate_limit_error_and_its_retry_after_is_honoured(limited_api, merchant):
    with Kassa(merchant.test_key, base_url=limited_api, max_retries=0) as kassa:
        kassa.payments.list()
        kassa.payments.list()
        with pytest.raises(RateLimitError) as caught:
            kassa.payments.list()
    err = caught.value
    assert (err.status, err.code) == (429, "RATE_LIMIT_EXCEEDED") and 0 < err.retry_after <= 61
    assert err.headers["X-RateLimit-Remaining"] == "0" and err.request_id

    waits: list[float] = []  # the same refusal with retries on: each wait is at least what the API asked
    transport = Transport(api_key=merchant.test_key, base_url=limited_api, timeout=5, max_retries=2, sleep=waits.append)
    with pytest.raises(RateLimitError) as again:
        Payments(transport).list()
    if again.value.retry_after <= 60:
        assert len(waits) == 2 and min(waits) >= again.value.retry_after
    else:  # asked for longer than a minute: raised at once
        assert waits == []
