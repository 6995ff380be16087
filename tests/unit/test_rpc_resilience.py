"""RPC failures told apart (unavailable / range too large / other), URLs never showing their
keys, and the adaptive ``eth_getLogs`` window: against fake HTTP answers and a fake node."""

from __future__ import annotations

import logging

import pytest
import requests

from kassa_common.chains.networks import Network
from kassa_common.chains.rpc import (
    JsonRpc,
    RangeTooLarge,
    RpcError,
    RpcUnavailable,
    classify,
    redact,
    retry_after,
    scrub,
)
from kassa_chain_watcher import evm
from tests.support.limited_node import ALICE, LimitedNode, chain_on

SECRET_URLS = [
    ("https://mainnet.infura.io/v3/SECRETKEY123", "https://mainnet.infura.io"),
    ("https://eth-mainnet.g.alchemy.com/v2/SECRETKEY123/", "https://eth-mainnet.g.alchemy.com"),
    ("https://rpc.example.com:8443/?apikey=SECRETKEY123", "https://rpc.example.com:8443"),
    ("http://kassa:SECRETKEY123@127.0.0.1:18443/wallet/x", "http://127.0.0.1:18443"),
    ("http://[::1]:8545/SECRETKEY123", "http://[::1]:8545"),
]


# -- redaction -------------------------------------------------------------------------------
@pytest.mark.parametrize(("url", "shown"), SECRET_URLS)
def test_redact_keeps_scheme_host_and_port_only(url, shown):
    assert redact(url) == shown


@pytest.mark.parametrize("url", ["", None, "not a url", "http://host:notaport/x"])
def test_redact_of_something_unparsable_shows_nothing_of_it(url):
    assert redact(url) == "<RPC URL>"


@pytest.mark.parametrize(("url", "_"), SECRET_URLS)
def test_scrub_removes_the_url_and_its_secret_parts_from_a_text(url, _):
    path = "/" + url.split("://", 1)[1].split("/", 1)[-1]  # what requests' errors quote
    text = f"POST {url} failed; Max retries exceeded with url: {path}"
    assert "SECRETKEY123" not in scrub(text, url)
    assert redact(url) in scrub(text, url)


class FakeResponse:
    def __init__(self, status: int, text: str, headers: dict | None = None, reason: str = "") -> None:
        self.status_code, self.text, self.headers, self.reason = status, text, headers or {}, reason


class FakeSession:
    """Answers each post with the next of ``answers`` (a FakeResponse, or an exception to raise)."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)

    def post(self, url, **kw):
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def close(self) -> None:
        pass


def rpc_answering(*answers, url="https://mainnet.infura.io/v3/SECRETKEY123") -> JsonRpc:
    rpc = JsonRpc(url)
    rpc._session = FakeSession(*answers)
    return rpc


def test_a_connection_error_is_unavailability_and_its_text_holds_no_key():
    refused = requests.ConnectionError(
        "HTTPSConnectionPool(host='mainnet.infura.io', port=443): Max retries exceeded with url: "
        "/v3/SECRETKEY123 (Caused by NewConnectionError('Failed to establish a new connection: "
        "[Errno 111] Connection refused'))"
    )
    rpc = rpc_answering(refused)
    with pytest.raises(RpcUnavailable) as info:
        rpc.call("eth_blockNumber")
    assert "SECRETKEY123" not in str(info.value) and "mainnet.infura.io" in str(info.value)
    assert "Connection refused" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__  # a traceback shows no key either
    assert "SECRETKEY123" not in repr(rpc)


def test_a_timeout_is_unavailability():
    with pytest.raises(RpcUnavailable):
        rpc_answering(requests.ReadTimeout("read timed out")).call("eth_blockNumber")


def test_http_429_is_unavailability_with_the_wait_the_node_asked_for():
    rpc = rpc_answering(
        FakeResponse(
            429,
            '{"jsonrpc":"2.0","error":{"code":429,"message":"slow down"}}',
            {"Retry-After": "7"},
            "Too Many Requests",
        )
    )
    with pytest.raises(RpcUnavailable) as info:
        rpc.call("eth_blockNumber")
    assert info.value.retry_after == 7.0


def test_a_5xx_without_a_json_rpc_answer_is_unavailability():
    with pytest.raises(RpcUnavailable) as info:
        rpc_answering(FakeResponse(502, "<html>Bad Gateway</html>", reason="Bad Gateway")).batch([("eth_chainId", [])])
    assert info.value.retry_after is None


def test_a_5xx_with_a_json_rpc_error_is_that_error():
    """Bitcoin Core answers a failed call with HTTP 500 and the JSON-RPC error."""
    rpc = rpc_answering(
        FakeResponse(500, '{"result":null,"error":{"code":-8,"message":"Block height out of range"},"id":1}'),
        url="http://user:SECRETKEY123@127.0.0.1:18443",
    )
    with pytest.raises(RpcError) as info:
        rpc.call("getblockhash", 10**9)
    assert type(info.value) is RpcError and "out of range" in str(info.value)


def test_a_batch_entry_refused_as_too_large_raises_range_too_large():
    reply = '[{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"query returned more than 10000 results"}}]'
    with pytest.raises(RangeTooLarge):
        rpc_answering(FakeResponse(200, reply)).batch([("eth_getLogs", [{}])])


@pytest.mark.parametrize(
    "message",
    [
        "query returned more than 10000 results",
        "Query returned more than 10000 results. Try with this block range [0x1, 0x2].",
        "too many results",
        "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range",
        "Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block range.",
        "block range is too wide",
        "exceed maximum block range: 5000",
        "limit exceeded",
    ],
)
def test_providers_ways_of_saying_too_many_logs_are_range_too_large(message):
    assert type(classify({"code": -32000, "message": message}, "eth_getLogs")) is RangeTooLarge


def test_code_32005_is_range_too_large_unless_it_says_rate():
    assert type(classify({"code": -32005, "message": "whatever"}, "eth_getLogs")) is RangeTooLarge
    assert type(classify({"code": -32005, "message": "project ID request rate exceeded"}, "x")) is RpcUnavailable


@pytest.mark.parametrize(
    "error",
    [
        {"code": 429, "message": "Your app has exceeded its compute units per second capacity"},
        {"code": -32000, "message": "rate limit reached"},
        {"code": -32603, "message": "Too Many Requests"},
    ],
)
def test_rate_limits_in_a_json_rpc_error_are_unavailability(error):
    assert type(classify(error, "eth_call")) is RpcUnavailable


@pytest.mark.parametrize(
    "error",
    [
        {"code": -32601, "message": "the method eth_foo does not exist/is not available"},
        {"code": -32602, "message": "invalid argument 0: hex string without 0x prefix"},
        {"code": -8, "message": "Block height out of range"},
    ],
)
def test_other_errors_stay_plain_rpc_errors(error):
    assert type(classify(error, "x")) is RpcError


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("", None),
        ("2", 2.0),
        ("0.5", 0.5),
        ("-3", 0.0),
        ("99999", 300.0),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: now
    ],
)
def test_retry_after_header(value, seconds):
    assert retry_after(value) == seconds


# -- the adaptive eth_getLogs window -----------------------------------------------------------


def test_a_refused_range_is_read_in_halves_completely_and_in_order():
    node = LimitedNode(limit=10)
    chain = chain_on(node)
    found = chain._token_transfers(100, 199, {ALICE})
    assert [n for n, _, _ in found] == list(range(100, 200))  # every block once, in order
    assert [f.amount_units for _, _, f in found] == list(range(100, 200))
    assert node.asked[:4] == [(100, 163), (100, 131), (100, 115), (100, 107)]  # 64 → 32 → 16 → 8 blocks
    answered = [(lo, hi) for lo, hi in node.asked if hi - lo + 1 <= node.limit]
    assert [lo for lo, _ in answered] == [100] + [hi + 1 for _, hi in answered[:-1]]  # no gap, no overlap
    assert answered[-1][1] == 199


def test_the_window_grows_back_after_answers_in_a_row_up_to_its_maximum():
    node = LimitedNode(limit=8)
    chain = chain_on(node)
    chain._token_transfers(0, 15, {ALICE})  # 16 blocks refused, then 2 answers of 8
    assert chain.log_range == 8
    node.limit = 10**6  # the provider relents
    node.asked.clear()
    found = chain._token_transfers(16, 16 + 1000, {ALICE})
    assert [n for n, _, _ in found] == list(range(16, 1017))
    sizes = [hi - lo + 1 for lo, hi in node.asked]
    more = evm.GROW_AFTER - 2  # answers still needed for a streak of GROW_AFTER
    assert sizes[: more + 1] == [8] * more + [16]
    assert sizes[more : more + evm.GROW_AFTER + 1] == [16] * evm.GROW_AFTER + [32]
    assert max(sizes) == 64 and chain.log_range == 64  # never beyond the configured maximum


def test_a_window_that_keeps_hitting_the_limit_does_not_retry_the_too_large_range_in_a_loop():
    node = LimitedNode(limit=5)
    chain = chain_on(node, log_range=16)
    chain._token_transfers(0, 199, {ALICE})
    refused = [(lo, hi) for lo, hi in node.asked if hi - lo + 1 > 5]
    assert len(set(refused)) == len(refused)  # each refused range asked once only
    assert len(node.asked) < 200 // 4 + 2 * len(refused)  # pieces of 4 blocks, plus the growth attempts


def test_a_single_block_that_is_too_large_raises():
    node = LimitedNode(limit=0)
    with pytest.raises(RangeTooLarge, match="block 7 alone"):
        chain_on(node)._token_transfers(7, 20, {ALICE})
    assert node.asked[-1] == (7, 7)


def test_history_goes_through_the_window_too():
    node = LimitedNode(limit=3)
    chain = chain_on(node)
    blocks = chain.history(10, 40, [ALICE])
    assert [b.number for b in blocks] == list(range(10, 41))
    assert all(len(b.transfers) == 1 for b in blocks)


# -- the scan loop's circuit ---------------------------------------------------------------------
class Script:
    """A scanner whose ticks raise or answer as scripted, then stop the watcher."""

    def __init__(self, watcher, steps) -> None:
        self.watcher, self.steps, self.ticks = watcher, list(steps), 0

    def tick(self) -> bool:
        self.ticks += 1
        step = self.steps.pop(0)
        if not self.steps:
            self.watcher.stopping.set()
        if isinstance(step, BaseException):
            raise step
        return step


class Clock:
    """Stands for the watcher's ``stopping`` event: records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits, self._set = [], False

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True

    def wait(self, seconds) -> bool:
        self.waits.append(seconds)
        return self._set


def watcher_running(steps, poll=0.05):
    from types import SimpleNamespace

    from kassa_common.config import WatcherSettings
    from kassa_chain_watcher.network_watcher import NetworkWatcher
    from kassa_chain_watcher.watchlist import Watchlist

    net = Network("TESTNET", "evm", 1, 3, 1.0, "https://mainnet.infura.io/v3/SECRETKEY123", ())
    settings = SimpleNamespace(database_url="postgresql://kassa@127.0.0.1/kassa", networks=[net])
    watcher = NetworkWatcher(settings, net, None, Watchlist(), WatcherSettings(poll_seconds=poll, reload_seconds=1e9))
    watcher.lock = SimpleNamespace(still_held=lambda: True)
    watcher.stopping = Clock()
    watcher.scanner = Script(watcher, steps)
    watcher._loop()
    return watcher


def test_failing_scans_back_off_exponentially_and_a_success_resets_the_backoff(caplog):
    caplog.set_level(logging.DEBUG, logger="kassa.chain_watcher")
    down = RpcUnavailable("https://mainnet.infura.io: ConnectionError: refused")
    watcher = watcher_running([down] * 6 + [False] + [down, False])
    waits = watcher.stopping.waits
    assert len(waits) == 7
    assert all(0.1 * 2**i <= w <= 0.2 * 2**i for i, w in enumerate(waits[:6]))  # 0.2 · 2ⁿ, its upper half
    assert waits[5] >= 3.2  # no tight loop: the sixth wait is over 3 s
    assert 0.1 <= waits[6] <= 0.2  # after a good tick, back to the first wait
    text = caplog.text
    assert text.count("unavailable") == 2  # once per streak
    assert "scanning again after 6 failed attempt(s)" in text
    assert "https://mainnet.infura.io" in text and "SECRETKEY123" not in text
    assert "Traceback" not in text  # plain unavailability: no stack trace


def test_a_node_asking_to_retry_after_n_seconds_is_not_asked_sooner():
    limited = RpcUnavailable("HTTP 429", retry_after=5.0)
    watcher = watcher_running([limited, limited, False])
    assert watcher.stopping.waits[:2] == [5.0, 5.0]


def test_an_unexpected_error_is_logged_with_its_trace_once_per_streak(caplog):
    watcher = watcher_running([ValueError("boom")] * 3 + [False])
    assert watcher.scanner.ticks == 4
    assert caplog.text.count("Traceback") == 1 and "boom" in caplog.text


WARMING_UP = {"code": -28, "message": "Loading block index..."}  # what bitcoind/litecoind answer while starting


def test_a_node_warming_up_is_unavailability_not_a_node_on_another_chain():
    from kassa_common.chains.networks import load_registry
    from kassa_common.chains.nodes import chain_mismatch

    assert type(classify(WARMING_UP, "getblockchaininfo")) is RpcUnavailable
    assert type(classify({"code": -28, "message": "Verifying blocks..."}, "getblockcount")) is RpcUnavailable

    class Starting:
        def call(self, method, *params):
            raise classify(WARMING_UP, method)

    with pytest.raises(RpcUnavailable):  # set aside for a while, never refused for REFUSED_SECONDS
        chain_mismatch(load_registry({}).get("LOCAL_LITECOIN"), Starting())
