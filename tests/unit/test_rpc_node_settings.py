"""``<NETWORK>_RPC_URLS``, ``<NETWORK>_RPC_URL`` and ``<NETWORK>_RPC_QUORUM``, read by the one
Settings class; and the chain each Bitcoin network's nodes must be on."""

from __future__ import annotations

import pytest

from kassa_common.config import Settings


def base(env):
    return Settings.from_env(env).networks.get("BASE")


def test_a_comma_separated_list_gives_every_node_in_order_the_first_is_the_url():
    net = base({"BASE_RPC_URLS": " https://a.example/v3/K1 , https://b.example/K2,https://a.example/v3/K1 ,"})
    assert net.nodes == ("https://a.example/v3/K1", "https://b.example/K2")  # duplicates and blanks dropped
    assert net.rpc_url == "https://a.example/v3/K1" and net.live_enabled and net.rpc_quorum == 1


def test_the_single_url_setting_still_works_as_a_list_of_one():
    net = base({"BASE_RPC_URL": "https://a.example/K"})
    assert net.nodes == ("https://a.example/K",) and net.rpc_url == "https://a.example/K"


def test_the_list_wins_over_the_single_url():
    assert base({"BASE_RPC_URL": "https://old.example", "BASE_RPC_URLS": "https://new.example"}).nodes == (
        "https://new.example",
    )


def test_no_node_leaves_the_network_off():
    net = base({})
    assert net.nodes == () and not net.live_enabled


def test_a_quorum_needs_as_many_nodes():
    assert base({"BASE_RPC_URLS": "http://a,http://b", "BASE_RPC_QUORUM": "2"}).rpc_quorum == 2
    with pytest.raises(ValueError, match="BASE_RPC_QUORUM=3 needs at least 3 nodes in BASE_RPC_URLS, which lists 2"):
        base({"BASE_RPC_URLS": "http://a,http://b", "BASE_RPC_QUORUM": "3"})


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_a_quorum_is_a_positive_integer(value):
    with pytest.raises(ValueError, match="BASE_RPC_QUORUM must be a positive integer"):
        base({"BASE_RPC_URLS": "http://a,http://b", "BASE_RPC_QUORUM": value})


def test_a_node_that_is_not_a_url_is_refused_without_repeating_it():
    with pytest.raises(ValueError) as info:
        base({"BASE_RPC_URLS": "https://a.example/KEY,SECRETKEY"})
    assert "BASE_RPC_URLS" in str(info.value) and "SECRETKEY" not in str(info.value)


def test_bitcoin_networks_know_the_chain_their_nodes_must_be_on():
    networks = Settings.from_env({}).networks
    assert networks.get("BITCOIN").bitcoin_chain == "main"
    assert networks.get("BITCOIN_REGTEST").bitcoin_chain == "regtest"
    assert networks.get("BASE").bitcoin_chain is None
