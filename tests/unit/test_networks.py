"""Network registry: file loading, settings overrides, lookups."""

import json

import pytest

from kassa_common.chains.networks import Network, Registry, Token, load_registry

EXPECTED_ORDER = [
    "ETHEREUM",
    "BASE",
    "POLYGON",
    "ARBITRUM",
    "OPTIMISM",
    "BSC",
    "BITCOIN",
    "LITECOIN",
    "LOCAL_EVM",
    "BITCOIN_REGTEST",
    "LOCAL_LITECOIN",
]


@pytest.fixture()
def registry():
    return load_registry({})


def test_default_file_loads_in_order(registry):
    assert [n.name for n in registry] == EXPECTED_ORDER
    assert len(registry) == len(EXPECTED_ORDER)


def test_the_second_dev_network_exists_only_while_its_rpc_url_is_set():
    with_it = load_registry({"LOCAL_EVM_2_RPC_URL": "http://127.0.0.1:8546"})

    second = with_it.get("LOCAL_EVM_2")
    after = EXPECTED_ORDER.index("LOCAL_EVM") + 1
    assert [n.name for n in with_it] == [*EXPECTED_ORDER[:after], "LOCAL_EVM_2", *EXPECTED_ORDER[after:]]
    assert (second.kind, second.chain_id, second.dev, second.live_enabled) == ("evm", 31338, True, True)
    assert second.forwarder_factory == with_it.get("LOCAL_EVM").forwarder_factory  # the same on every chain
    assert second.tokens == with_it.get("LOCAL_EVM").tokens  # the same dev tokens, at the same addresses
    assert load_registry({}).get("LOCAL_EVM_2") is None


def test_lookup_is_case_insensitive(registry):
    assert registry.get("ethereum") is registry.get("ETHEREUM")
    assert registry.get("Bitcoin_Regtest").bech32_hrp == "bcrt"
    assert registry.get("dogecoin") is None


def test_network_fields(registry):
    eth = registry.get("ETHEREUM")
    assert (eth.kind, eth.chain_id, eth.required_confirmations, eth.block_time) == ("evm", 1, 12, 12.0)
    assert eth.rpc_url is None and not eth.live_enabled
    assert eth.bech32_hrp is None and eth.dev is False
    btc = registry.get("BITCOIN")
    assert (btc.kind, btc.chain_id, btc.bech32_hrp) == ("bitcoin", None, "bc")
    assert registry.get("LOCAL_EVM").dev is True


def test_token_lookup(registry):
    eth = registry.get("ETHEREUM")
    usdc = eth.token("usdc")
    assert usdc == Token("USDC", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", 6, False)
    assert eth.token("ETH").native and eth.token("ETH").contract is None
    assert eth.token("BTC") is None
    assert registry.get("BSC").token("USDT").decimals == 18
    assert registry.get("POLYGON").token("pol").native


def test_rpc_url_and_confirmations_from_env():
    reg = load_registry({"BASE_RPC_URL": "http://node:8545", "BASE_CONFIRMATIONS": "3", "ETHEREUM_RPC_URL": ""})
    base = reg.get("BASE")
    assert base.rpc_url == "http://node:8545" and base.live_enabled
    assert base.required_confirmations == 3
    assert reg.get("ETHEREUM").rpc_url is None and not reg.get("ETHEREUM").live_enabled
    assert reg.get("ETHEREUM").required_confirmations == 12


def test_ws_url_from_env_or_a_development_chains_rpc_url():
    reg = load_registry(
        {
            "BASE_RPC_URL": "https://node.example/key",
            "BASE_WS_URL": "wss://node.example/ws/key",
            "POLYGON_RPC_URL": "https://polygon.example",
            "LOCAL_EVM_RPC_URL": "http://127.0.0.1:8545",
            "BITCOIN_REGTEST_RPC_URL": "http://127.0.0.1:18443",
        }
    )
    assert reg.get("BASE").ws_url == "wss://node.example/ws/key"
    assert reg.get("POLYGON").ws_url is None  # a hosted node's WebSocket URL is its own: never guessed
    assert reg.get("LOCAL_EVM").ws_url == "ws://127.0.0.1:8545"  # anvil: one port for both
    assert reg.get("BITCOIN_REGTEST").ws_url is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BASE_WS_URL": "https://node.example"}, "BASE_WS_URL must be a WebSocket URL"),
        ({"BITCOIN_WS_URL": "ws://node.example"}, "BITCOIN_WS_URL: only EVM networks"),
    ],
)
def test_bad_ws_urls_raise(env, message):
    with pytest.raises(ValueError, match=message):
        load_registry(env)


def test_blank_confirmations_keeps_default():
    assert load_registry({"BITCOIN_CONFIRMATIONS": ""}).get("BITCOIN").required_confirmations == 2


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5"])
def test_bad_confirmations_raise(value):
    with pytest.raises(ValueError, match="POLYGON_CONFIRMATIONS"):
        load_registry({"POLYGON_CONFIRMATIONS": value})


def test_to_public():
    pub = load_registry({"BITCOIN_RPC_URL": "http://u:p@btc:8332"}).get("BITCOIN").to_public()
    assert pub == {
        "name": "BITCOIN",
        "display_name": "Bitcoin",
        "kind": "bitcoin",
        "chain_id": None,
        "required_confirmations": 2,
        "live_enabled": True,
        "tokens": [{"symbol": "BTC", "contract": None, "decimals": 8, "native": True}],
    }
    json.dumps(pub)


def test_all_contracts_are_checksummed(registry):
    for net in registry:
        for token in net.tokens:
            assert (token.contract is None) == token.native


def _write(tmp_path, networks):
    path = tmp_path / "networks.json"
    path.write_text(json.dumps({"networks": networks}))
    return str(path)


def _evm(name="TESTNET", **overrides):
    net = {
        "name": name,
        "kind": "evm",
        "chain_id": 5,
        "required_confirmations": 1,
        "block_time": 1.0,
        "tokens": [{"symbol": "ETH", "contract": None, "decimals": 18, "native": True}],
    }
    net.update(overrides)
    return net


def test_custom_path_and_lowercase_contract_is_checksummed(tmp_path):
    token = {"symbol": "USDC", "contract": "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", "decimals": 6, "native": False}
    reg = load_registry({}, _write(tmp_path, [_evm(tokens=[token])]))
    assert [n.name for n in reg] == ["TESTNET"]
    assert reg.get("testnet").token("USDC").contract == "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"


@pytest.mark.parametrize(
    "bad",
    [
        [_evm(), _evm()],
        [_evm(kind="solana")],
        [_evm(kind="bitcoin")],  # no bech32_hrp
        [
            _evm(
                tokens=[
                    {
                        "symbol": "X",
                        "contract": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB4A",
                        "decimals": 6,
                        "native": False,
                    }
                ]
            )
        ],
        [_evm(tokens=[{"symbol": "X", "contract": "0x1234", "decimals": 6, "native": False}])],
        [_evm(tokens=[{"symbol": "X", "contract": None, "decimals": -1, "native": True}])],
        [_evm(forwarder_factory="0x73e1075cf6B25666e469D7e8F21Bc4D05f8EDFc3")],  # wrong checksum
        [_evm(forwarder_factory="not an address")],
        [
            {
                "name": "BTC",
                "kind": "bitcoin",
                "chain_id": None,
                "required_confirmations": 1,
                "block_time": 1.0,
                "bech32_hrp": "bc",
                "forwarder_factory": "0x489C4cb42Ec0F6f04f5cC6Df6C86791cd5550a03",
                "tokens": [{"symbol": "BTC", "contract": None, "decimals": 8, "native": True}],
            }
        ],
    ],
)
def test_invalid_files_raise(tmp_path, bad):
    with pytest.raises(ValueError):
        load_registry({}, _write(tmp_path, bad))


def test_registry_from_objects():
    net = Network("A", "evm", 1, 1, 1.0, None, (), None, False)
    reg = Registry([net])
    assert reg.get("a") is net and list(reg) == [net]


def test_every_evm_network_has_the_one_forwarder_factory_address(registry):
    from kassa_common.chains.forwarder import factory_address

    assert {n.name: n.forwarder_factory for n in registry if n.kind == "evm"} == {
        n.name: factory_address() for n in registry if n.kind == "evm"
    }
    assert all(n.forwarder_factory is None for n in registry if n.kind == "bitcoin")


def test_networks_have_display_names_and_explorer_links_where_public():
    registry = load_registry({})
    assert registry.get("BASE").label == "Base" and registry.get("ETHEREUM").label == "Ethereum"
    assert registry.get("BASE").explorer_url("0xabc") == "https://basescan.org/tx/0xabc"
    assert registry.get("BITCOIN").explorer_url("ff") == "https://mempool.space/tx/ff"
    assert registry.get("LOCAL_EVM").explorer_url("0xabc") is None  # the dev chain has no explorer
    assert registry.get("BASE").explorer_url(None) is None
    assert all(n.display_name for n in registry)
