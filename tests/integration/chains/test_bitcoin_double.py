"""The regtest double (or a real ``bitcoind -regtest`` when BITCOIN_RPC_URL is set), over real HTTP JSON-RPC."""

import os
from decimal import Decimal

import pytest
import requests
from bitcoin import segwit_addr
from bitcoin.core import CBlock, CBlockHeader, CheckBlock, CTransaction, Hash160, b2lx, lx, x
from bitcoin.core.key import CPubKey
from bitcoin.core.script import SIGHASH_ALL, SIGVERSION_WITNESS_V0, CScript, SignatureHash
from bitcoin.wallet import CKey

from tests.support.bitcoin_double import BitcoinDouble, to_sats
from tests.support.bitcoin_rpc import BitcoinRPC, RPCError, regtest_node  # noqa: F401 (fixture)

REGTEST_GENESIS = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"


def external_address() -> str:
    """A fresh P2WPKH address that the node's wallet does not own (a customer paying an invoice address)."""
    return segwit_addr.encode("bcrt", 0, Hash160(CKey(os.urandom(32)).pub))


def rpc_error(fn, *args) -> RPCError:
    with pytest.raises(RPCError) as info:
        fn(*args)
    return info.value


def double_only(node):
    if not node.is_double:
        pytest.skip("exercises the double itself")


def test_mine_and_read_back_at_all_verbosities(regtest_node):
    rpc = regtest_node.rpc
    start = rpc.getblockcount()
    assert rpc.getblockhash(0) == REGTEST_GENESIS
    hashes = regtest_node.mine(3)
    assert len(hashes) == 3 and rpc.getblockcount() == start + 3 and rpc.getbestblockhash() == hashes[-1]
    info = rpc.getblockchaininfo()
    assert info["chain"] == "regtest" and info["blocks"] == start + 3 and info["bestblockhash"] == hashes[-1]

    for offset, blockhash in enumerate(hashes, start=1):
        height = start + offset
        assert rpc.getblockhash(height) == blockhash
        header = rpc.getblockheader(blockhash)
        assert header["hash"] == blockhash and header["height"] == height
        assert header["confirmations"] == 4 - offset
        assert header["bits"] == "207fffff" and header["previousblockhash"] == rpc.getblockhash(height - 1)
        assert ("nextblockhash" in header) == (offset < 3)
        assert isinstance(header["difficulty"], Decimal) and header["nTx"] >= 1
        assert header["mediantime"] <= header["time"]
        assert int(header["chainwork"], 16) == 2 * (height + 1) and len(header["chainwork"]) == 64

        v1 = rpc.getblock(blockhash)  # default verbosity 1
        assert v1 == rpc.getblock(blockhash, 1)
        assert {k: v1[k] for k in header} == header
        assert v1["size"] >= v1["strippedsize"] and v1["weight"] == 3 * v1["strippedsize"] + v1["size"]
        assert all(isinstance(t, str) and len(t) == 64 for t in v1["tx"])

        v2 = rpc.getblock(blockhash, 2)
        assert [t["txid"] for t in v2["tx"]] == v1["tx"]
        coinbase = v2["tx"][0]
        assert "coinbase" in coinbase["vin"][0] and "fee" not in coinbase
        assert coinbase["vout"][0]["value"] >= Decimal("0.00000001")
        assert coinbase["vout"][0]["scriptPubKey"]["type"] == "witness_v0_keyhash"
        assert coinbase["vout"][0]["scriptPubKey"]["address"].startswith("bcrt1")

        raw = rpc.getblock(blockhash, 0)
        block = CBlock.deserialize(x(raw))
        assert b2lx(block.GetHash()) == blockhash
        assert [b2lx(t.GetTxid()) for t in block.vtx] == v1["tx"]
        assert [t["hex"] for t in v2["tx"]] == [t.serialize().hex() for t in block.vtx]


def test_block_hex_has_real_header_merkle_root_and_pow(regtest_node):
    address = external_address()
    txid = regtest_node.send(address, "0.5")
    blockhash = regtest_node.mine(1)[0]
    block = CBlock.deserialize(x(regtest_node.rpc.getblock(blockhash, 0)))

    assert block.hashMerkleRoot == block.calc_merkle_root()
    assert b2lx(block.hashMerkleRoot) == regtest_node.rpc.getblockheader(blockhash)["merkleroot"]
    assert b2lx(block.GetHash()) == blockhash
    assert block.hashPrevBlock == lx(regtest_node.rpc.getblockheader(blockhash)["previousblockhash"])
    assert block.nBits == 0x207FFFFF
    target = (block.nBits & 0xFFFFFF) << 8 * ((block.nBits >> 24) - 3)
    assert int.from_bytes(block.GetHash(), "little") <= target
    header = CBlockHeader.deserialize(x(regtest_node.rpc.getblockheader(blockhash, False)))
    assert header.GetHash() == block.GetHash()
    # Context-free consensus checks incl. the segwit witness commitment (PoW checked above: the library's
    # PoW limit is the selected network's, which is process-global state).
    CheckBlock(block, fCheckPoW=False, cur_time=block.nTime)
    assert txid in [b2lx(t.GetTxid()) for t in block.vtx]


def test_payment_goes_from_mempool_into_block_with_exact_value(regtest_node):
    rpc = regtest_node.rpc
    address, amount = external_address(), Decimal("1.23456789")
    txid = regtest_node.send(address, amount)
    assert txid in rpc.getrawmempool()
    pending = rpc.getrawtransaction(txid, True)
    assert pending["txid"] == txid and "blockhash" not in pending and "confirmations" not in pending

    blockhash = regtest_node.mine(1)[0]
    assert txid not in rpc.getrawmempool()
    block = rpc.getblock(blockhash, 2)
    (tx,) = [t for t in block["tx"] if t["txid"] == txid]
    (paid,) = [o for o in tx["vout"] if o["scriptPubKey"].get("address") == address]
    assert paid["value"] == amount and isinstance(paid["value"], Decimal)
    assert paid["scriptPubKey"]["type"] == "witness_v0_keyhash"
    version, program = segwit_addr.decode("bcrt", address)
    assert paid["scriptPubKey"]["hex"] == bytes([0, 20, *program]).hex() and version == 0
    assert tx["hash"] != tx["txid"]  # segwit: wtxid differs
    assert tx["vsize"] < tx["size"] and tx["weight"] <= 4 * tx["vsize"]

    confirmed = rpc.getrawtransaction(txid, True)
    assert confirmed["blockhash"] == blockhash and confirmed["confirmations"] == 1
    assert confirmed["time"] == confirmed["blocktime"] == block["time"]
    assert confirmed["hex"] == rpc.getrawtransaction(txid) == tx["hex"]
    regtest_node.mine(1)
    assert rpc.getrawtransaction(txid, True)["confirmations"] == 2

    # The transaction is really signed: check each P2WPKH input's BIP143 signature against the spent output.
    ctx = CTransaction.deserialize(x(tx["hex"]))
    spent_total = 0
    for n, vin in enumerate(tx["vin"]):
        prev_out = rpc.getrawtransaction(vin["txid"], True)["vout"][vin["vout"]]
        sats = int(prev_out["value"] * 100_000_000)
        spent_total += sats
        sig, pub = (bytes.fromhex(item) for item in vin["txinwitness"])
        assert prev_out["scriptPubKey"]["hex"] == "0014" + Hash160(pub).hex()
        code = CScript(bytes.fromhex("76a914") + Hash160(pub) + bytes.fromhex("88ac"))
        sighash = SignatureHash(code, ctx, n, SIGHASH_ALL, amount=sats, sigversion=SIGVERSION_WITNESS_V0)
        assert sig[-1] == SIGHASH_ALL and CPubKey(pub).verify(sighash, sig[:-1])
    fee = spent_total - sum(int(o["value"] * 100_000_000) for o in tx["vout"])
    assert fee > 0 and tx["fee"] == Decimal(fee).scaleb(-8)


def test_invalidateblock_puts_tx_back_into_mempool(regtest_node):
    rpc = regtest_node.rpc
    txid = regtest_node.send(external_address(), Decimal("0.25"))
    blockhash = regtest_node.mine(1)[0]
    height = rpc.getblockcount()

    assert rpc.invalidateblock(blockhash) is None
    assert rpc.getblockcount() == height - 1
    assert rpc.getbestblockhash() == rpc.getblockheader(blockhash)["previousblockhash"]
    assert txid in rpc.getrawmempool()
    assert "blockhash" not in rpc.getrawtransaction(txid, True)
    assert rpc.getblockheader(blockhash)["confirmations"] == -1
    assert rpc.getblock(blockhash)["confirmations"] == -1
    assert "nextblockhash" not in rpc.getblockheader(rpc.getbestblockhash())

    rpc.reconsiderblock(blockhash)
    assert rpc.getblockcount() == height and rpc.getbestblockhash() == blockhash
    assert txid not in rpc.getrawmempool()
    assert rpc.getrawtransaction(txid, True)["blockhash"] == blockhash


def test_reorg_to_longer_chain_without_the_payment(regtest_node):
    rpc = regtest_node.rpc
    address = external_address()
    txid = regtest_node.send(address, Decimal(2))
    old_block = regtest_node.mine(1)[0]
    old_tip = regtest_node.mine(1)[0]
    height = rpc.getblockcount()

    rpc.invalidateblock(old_block)  # step 1: disconnect the block with the payment (and the one on top)
    assert rpc.getblockcount() == height - 2 and txid in rpc.getrawmempool()
    regtest_node.drop_tx(txid)  # step 2: the payment vanishes (double: x_dropfrommempool; bitcoind: RBF conflict)
    assert txid not in rpc.getrawmempool()
    new_blocks = regtest_node.mine(3)  # step 3: a longer competing chain
    assert rpc.getblockcount() == height + 1 and rpc.getbestblockhash() == new_blocks[-1]

    for blockhash in (old_block, old_tip):
        assert rpc.getblockheader(blockhash)["confirmations"] == -1
    assert rpc.getblockhash(height - 1) == new_blocks[0] != old_block
    for blockhash in new_blocks:
        block = rpc.getblock(blockhash, 2)
        assert txid not in [t["txid"] for t in block["tx"]]
        assert address not in [o["scriptPubKey"].get("address") for t in block["tx"] for o in t["vout"]]
    # As a real node's -txindex (litecoind showed it): the payment is still found, in the block that
    # last held it, now stale: its hash, 0 confirmations, no time; asked in that block, not in the chain.
    stale = rpc.getrawtransaction(txid, True)
    assert (stale["blockhash"], stale["confirmations"]) == (old_block, 0) and "time" not in stale
    assert rpc.getrawtransaction(txid, True, old_block)["in_active_chain"] is False
    assert regtest_node.block_of(txid) is None
    assert txid not in rpc.getrawmempool()
    assert rpc_error(rpc.getrawtransaction, "ab" * 32).code == -5  # a transaction never seen


def test_reorg_out_helper(regtest_node):
    rpc = regtest_node.rpc
    txid = regtest_node.send(external_address(), Decimal("0.1"))
    regtest_node.mine(2)
    height = rpc.getblockcount()
    new_blocks = regtest_node.reorg_out(txid)
    assert len(new_blocks) == 3 and rpc.getblockcount() == height + 1
    assert regtest_node.block_of(txid) is None
    assert txid not in rpc.getrawmempool()


def test_error_codes(regtest_node):
    rpc = regtest_node.rpc
    unknown = "00" * 32
    assert rpc_error(rpc.getblock, unknown).code == -5
    assert rpc_error(rpc.getblockheader, unknown).code == -5
    assert rpc_error(rpc.invalidateblock, unknown).code == -5
    assert rpc_error(rpc.getblock, "abc").code == -8
    assert rpc_error(rpc.getblock, "zz" * 32).code == -8
    assert rpc_error(rpc.getblockhash, rpc.getblockcount() + 1).code == -8
    assert rpc_error(rpc.getrawtransaction, unknown).code == -5
    assert rpc_error(rpc.sendtoaddress, "bcrt1qnotanaddress", 1).code == -5
    err = rpc_error(rpc.nosuchmethod)
    assert err.code == -32601 and err.message == "Method not found"

    # The raw HTTP/JSON-RPC 1.0 envelope, as Core sends it.
    url = regtest_node.url
    reply = requests.post(url, json={"jsonrpc": "1.0", "id": "t1", "method": "nosuchmethod", "params": []})
    assert reply.status_code == 404
    assert reply.json() == {"result": None, "error": {"code": -32601, "message": "Method not found"}, "id": "t1"}
    reply = requests.post(url, json={"jsonrpc": "1.0", "id": 7, "method": "getblock", "params": [unknown]})
    assert reply.status_code == 500 and reply.json()["error"]["code"] == -5 and reply.json()["id"] == 7
    reply = requests.post(url, json={"jsonrpc": "1.0", "id": 8, "method": "getblockcount", "params": []})
    assert reply.status_code == 200 and reply.json() == {"result": rpc.getblockcount(), "error": None, "id": 8}


def test_double_enforces_coinbase_maturity_and_exact_amounts():
    with BitcoinDouble() as double:
        rpc = BitcoinRPC(double.url)
        assert rpc.getblockcount() == 0 and rpc.getbestblockhash() == REGTEST_GENESIS
        wallet = rpc.getnewaddress()
        rpc.generatetoaddress(100, wallet)
        assert rpc_error(rpc.sendtoaddress, external_address(), 1).code == -6  # coinbases not mature yet
        rpc.generatetoaddress(1, wallet)
        assert rpc.getbalance() == Decimal("50.00000000")
        address = external_address()
        for amount in (0.1, "0.00001", Decimal("0.12345678"), 3):
            txid = rpc.sendtoaddress(address, amount)
            vout = rpc.getrawtransaction(txid, True)["vout"]
            assert vout[0]["value"] == Decimal(str(amount)) and vout[0]["scriptPubKey"]["address"] == address
        assert rpc_error(rpc.sendtoaddress, address, "0.000000001").code == -3
        assert rpc_error(rpc.sendtoaddress, address, 0).code == -3
        assert rpc_error(rpc.sendtoaddress, address, 1000).code == -6
        assert to_sats(0.1) == 10_000_000 and to_sats("21000000") == 21_000_000 * 100_000_000
        rpc.close()


def test_double_drop_chain_selection_and_json_rpc_2(regtest_node):
    double_only(regtest_node)
    rpc = regtest_node.rpc
    # Only one coinbase is mature, so the second payment spends the first one's change: dropping the parent
    # drops the child too, and the wallet gets its coin back.
    parent = regtest_node.send(external_address(), Decimal("0.3"))
    child = regtest_node.send(external_address(), Decimal("0.4"))
    assert rpc.getrawtransaction(child, True)["vin"][0]["txid"] == parent
    assert rpc.x_dropfrommempool(parent) == [parent, child] and rpc.getrawmempool() == []
    assert rpc_error(rpc.x_dropfrommempool, parent).code == -5
    assert rpc.getbalance() == Decimal(50)
    # An equal-length competing branch does not win: the first-seen block keeps the tip.
    tip = regtest_node.mine(1)[0]
    rpc.invalidateblock(tip)
    rival = regtest_node.mine(1)[0]
    rpc.reconsiderblock(tip)
    assert rpc.getbestblockhash() == tip and rpc.getblockheader(rival)["confirmations"] == -1
    # ... until it becomes longer.
    rpc.invalidateblock(tip)
    regtest_node.mine(1)
    rpc.reconsiderblock(tip)
    assert rpc.getblockheader(tip)["confirmations"] == -1 and rpc.getblock(rival)["confirmations"] == 2

    reply = requests.post(regtest_node.url, json={"jsonrpc": "2.0", "id": 1, "method": "nosuchmethod"})
    assert reply.status_code == 200
    assert reply.json() == {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": 1}
    reply = requests.post(
        regtest_node.url,
        json=[
            {"jsonrpc": "2.0", "id": 1, "method": "getblockcount"},
            {"id": 2, "method": "getblockhash", "params": {"height": 0}},
        ],
    )
    assert [r["result"] for r in reply.json()] == [rpc.getblockcount(), REGTEST_GENESIS]
