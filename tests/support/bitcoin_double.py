"""Bitcoin Core JSON-RPC *regtest double* for chain-watcher tests.

An in-process HTTP JSON-RPC server with Bitcoin Core 25+ method names and JSON shapes. Blocks hold real
python-bitcoinlib transactions under real headers (prev hash, merkle root, bits 0x207fffff, ground nonce):
BIP34 coinbases with a segwit commitment, and wallet payments that are signed P2WPKH spends.

Node RPCs: getblockchaininfo getblockcount getbestblockhash getblockhash getblockheader getblock (verbosity
0-2) getrawmempool getrawtransaction sendrawtransaction generatetoaddress invalidateblock reconsiderblock.
Wallet RPCs (one deterministic wallet): getnewaddress getbalance sendtoaddress bumpfee. Not Core:
x_dropfrommempool(txid) evicts a mempool tx plus its descendants and returns their txids.

Differences from a real node: it starts at genesis and enforces coinbase maturity for wallet spends (mine
101 blocks to a getnewaddress() address first; bitcoin_rpc.bitcoin_node() does). It acts as if -txindex=1,
and as a real txindex it forgets no transaction a reorg took out of the chain: getrawtransaction finds it
(outside the mempool) in the last block connected holding it, with 0 confirmations.
sendtoaddress pays 10 sat/vB, signals BIP125, sets nLockTime to the tip height like Core, and puts the
payment at vout 0 and change at vout 1 (Core randomises). Only bcrt1 addresses are accepted; verbose
getrawmempool and verbosity 3 are not built. Chain choice is Core's: most-work valid chain, first-seen wins
ties; txs of disconnected blocks go back to the mempool if still valid, conflicts and their descendants are
dropped. Coinbases carry an extra nonce so blocks never repeat. HTTP basic auth and URL paths are ignored.

Reorg recipe that drops payment T confirmed in block B at height h:
  1. invalidateblock(B): B and its successors are disconnected, the tip is h-1, T is back in the mempool.
  2. x_dropfrommempool(T). Real bitcoind has no such call, and abandontransaction refuses mempool txs:
     there, replace T by a BIP125 double-spend of its inputs (createrawtransaction,
     signrawtransactionwithwallet, sendrawtransaction), which gets mined instead of T.
     bitcoin_rpc.RegtestNode.drop_tx() does whichever applies.
  3. generatetoaddress(old_tip - h + 2): the longer chain lacks T; old blocks show confirmations -1.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import threading
import time
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bitcoin import segwit_addr
from bitcoin.core import (
    COIN,
    CBlock,
    CBlockHeader,
    CMutableTransaction,
    CMutableTxIn,
    CMutableTxOut,
    CoreRegTestParams,
    COutPoint,
    CTransaction,
    CTxInWitness,
    CTxWitness,
    Hash,
    Hash160,
    b2lx,
    b2x,
    lx,
)
from bitcoin.core.script import (
    OP_CHECKSIG,
    OP_DUP,
    OP_EQUALVERIFY,
    OP_HASH160,
    OPCODE_NAMES,
    SIGHASH_ALL,
    SIGVERSION_WITNESS_V0,
    CScript,
    CScriptOp,
    CScriptWitness,
    SignatureHash,
)
from bitcoin.wallet import CKey

HRP = "bcrt"  # regtest constants are used directly: bitcoin.SelectParams() is process-global
BITS, BLOCK_VERSION = 0x207FFFFF, 0x20000000
TARGET = 0x7FFFFF << 8 * (0x20 - 3)
DIFFICULTY = float("%.16g" % (0xFFFF / 0x7FFFFF / 256**3))  # GetDifficulty(0x207fffff), printed as Core does
COINBASE_MATURITY, HALVING_INTERVAL, FEE_RATE = 100, 150, 10  # FEE_RATE in sat/vB
GENESIS = CoreRegTestParams.GENESIS_BLOCK
HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class RPCError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def parse_hash(value, name: str) -> bytes:
    """Core's ParseHashV: 64 hex chars (display order) -> internal byte order."""
    if not isinstance(value, str) or len(value) != 64:
        raise RPCError(-8, f"{name} must be of length 64 (not {len(str(value))}, for '{value}')")
    if not HEX64.fullmatch(value):
        raise RPCError(-8, f"{name} must be hexadecimal string (not '{value}')")
    return lx(value)


def btc(sats: int) -> Decimal:
    return Decimal(sats).scaleb(-8)


def to_sats(amount) -> int:
    """Exact BTC -> satoshi conversion for int/float/str/Decimal amounts (Core's AmountFromValue)."""
    if isinstance(amount, bool) or not isinstance(amount, (int, float, str, Decimal)):
        raise RPCError(-3, "Amount is not a number or string")
    try:
        value = Decimal(str(amount)) * COIN
    except InvalidOperation:
        raise RPCError(-3, "Invalid amount") from None
    if value != value.to_integral_value():
        raise RPCError(-3, "Invalid amount")
    if not 0 <= value <= 21_000_000 * COIN:
        raise RPCError(-3, "Amount out of range")
    return int(value)


def dumps(obj) -> str:
    """json.dumps that writes Decimals as bare numbers (amounts get 8 decimals, like Core)."""
    raw = json.dumps(obj, default=lambda o: "\x00D{}\x00".format(format(o, "f")))
    return re.sub(r'"\\u0000D(-?[0-9.]+)\\u0000"', r"\1", raw)


# ---------------------------------------------------------------- addresses, scripts, descriptors
def _bech32_checksum(data: list, const: int) -> list:
    mod = segwit_addr.bech32_polymod(segwit_addr.bech32_hrp_expand(HRP) + data + [0] * 6) ^ const
    return [(mod >> 5 * (5 - i)) & 31 for i in range(6)]


def address_to_script(addr) -> CScript:
    """scriptPubKey of a bcrt1 (bech32 v0 / bech32m v1+) address; RPCError -5 otherwise."""
    if isinstance(addr, str) and addr.lower().startswith(HRP + "1") and addr in (addr.lower(), addr.upper()):
        data = [segwit_addr.CHARSET.find(c) for c in addr.lower()[len(HRP) + 1 :]]
        if len(data) >= 7 and -1 not in data and data[0] <= 16:
            prog = segwit_addr.convertbits(data[1:-6], 5, 8, False)
            const = 1 if data[0] == 0 else 0x2BC830A3
            if (
                prog
                and 2 <= len(prog) <= 40
                and _bech32_checksum(data[:-6], const) == data[-6:]
                and (data[0] != 0 or len(prog) in (20, 32))
            ):
                return CScript([data[0], bytes(prog)])
    raise RPCError(-5, "Invalid address")


def classify(spk: bytes):
    """(Core's scriptPubKey type, address or None) for the script kinds the double can produce."""
    n = len(spk)
    if 4 <= n <= 42 and (spk[0] == 0 or 0x51 <= spk[0] <= 0x60) and spk[1] == n - 2:
        ver = spk[0] - 0x50 if spk[0] else 0
        if ver == 0 and n not in (22, 34):
            return "nonstandard", None
        data = [ver, *segwit_addr.convertbits(spk[2:], 8, 5)]
        data += _bech32_checksum(data, 0x2BC830A3 if ver else 1)
        addr = HRP + "1" + "".join(segwit_addr.CHARSET[d] for d in data)
        kind = {(0, 22): "witness_v0_keyhash", (0, 34): "witness_v0_scripthash", (1, 34): "witness_v1_taproot"}
        return kind.get((ver, n), "witness_unknown"), addr
    if n in (35, 67) and spk[0] == n - 2 and spk[-1] == 0xAC:
        return "pubkey", None
    return ("nulldata" if n and spk[0] == 0x6A else "nonstandard"), None


def script_asm(script: bytes) -> str:
    """Core's ScriptToAsmStr (without sighash decoding)."""
    parts = []
    try:
        for op, data, _ in CScript(script).raw_iter():
            if data is not None and len(data) <= 4:  # short pushes print as script numbers
                num = int.from_bytes(data, "little")
                parts.append(str(-(num & ~(0x80 << 8 * (len(data) - 1))) if data and data[-1] & 0x80 else num))
            elif data is not None:
                parts.append(data.hex())
            else:
                parts.append(
                    str(op - 0x50)
                    if 0x51 <= op <= 0x60 or op == 0x4F
                    else OPCODE_NAMES.get(CScriptOp(op), "OP_UNKNOWN")
                )
    except Exception:  # noqa: BLE001 - shown as Core shows an undecodable script
        parts.append("[error]")
    return " ".join(parts)


_DESC_CHARS = "0123456789()[],'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#\"\\ "


def descriptor(desc: str) -> str:
    """desc + '#' + its BIP380 checksum."""

    def step(c, val):
        top, c = c >> 35, ((c & 0x7FFFFFFFF) << 5) ^ val
        for i, gen in enumerate((0xF5DEE51989, 0xA9FDCA3312, 0x1BAB10E32D, 0x3706B1677A, 0x644D626FFD)):
            c ^= gen if top >> i & 1 else 0
        return c

    c, groups = 1, []
    for ch in desc:
        c = step(c, _DESC_CHARS.index(ch) & 31)
        groups.append(_DESC_CHARS.index(ch) >> 5)
        if len(groups) == 3:
            c, groups = step(c, groups[0] * 9 + groups[1] * 3 + groups[2]), []
    if groups:
        c = step(c, groups[0] * 3 + groups[1] if len(groups) == 2 else groups[0])
    for _ in range(8):
        c = step(c, 0)
    return desc + "#" + "".join(segwit_addr.CHARSET[((c ^ 1) >> 5 * (7 - i)) & 31] for i in range(8))


def script_pubkey_json(spk: bytes) -> dict:
    kind, addr = classify(spk)
    desc = f"addr({addr})" if addr else f"pk({spk[1:-1].hex()})" if kind == "pubkey" else f"raw({spk.hex()})"
    return {
        "asm": script_asm(spk),
        "desc": descriptor(desc),
        "hex": spk.hex(),
        **({"address": addr} if addr else {}),
        "type": kind,
    }


# ---------------------------------------------------------------- chain state and RPC methods
class _Entry:
    __slots__ = ("block", "hash", "height", "prev", "seq")

    def __init__(self, block, height, prev, seq):
        self.block, self.hash, self.height, self.prev, self.seq = block, block.GetHash(), height, prev, seq


class RegtestChain:
    """Block tree, active chain, mempool and wallet. Methods named rpc_<name> are the RPCs."""

    def __init__(self, wallet_seed: bytes = b"kassa-regtest-double"):
        self.lock = threading.RLock()
        self.index = {GENESIS.GetHash(): _Entry(GENESIS, 0, None, 0)}  # arrival order, parents first
        self.active = [GENESIS.GetHash()]  # block hashes by height
        self.invalid: set[bytes] = set()
        self.mempool: dict[bytes, tuple] = {}  # txid -> (tx, entry time)
        self.txs: dict[bytes, CTransaction] = {}  # every tx ever seen, for fee lookups
        self.txindex: dict[bytes, bytes] = {}  # -txindex: txid -> the last block connected holding it
        self.keys: dict[bytes, CKey] = {}  # wallet: scriptPubKey -> key
        self.seed, self._cache, self._extranonce = wallet_seed, None, 0
        self.change_script = address_to_script(self.rpc_getnewaddress())

    def _view(self):
        """(utxo, txindex) of the active chain, cached per tip. utxo: (txid, n) -> (sats, spk, height, coinbase)."""
        if self._cache and self._cache[0] == self.active[-1]:
            return self._cache[1:]
        utxo, txindex = {}, {}
        for height, bh in enumerate(self.active[1:], start=1):  # the genesis coinbase is not spendable
            for tx in self.index[bh].block.vtx:
                txindex[tx.GetTxid()] = bh
                for txin in () if tx.is_coinbase() else tx.vin:
                    del utxo[(txin.prevout.hash, txin.prevout.n)]
                utxo.update(
                    ((tx.GetTxid(), n), (o.nValue, bytes(o.scriptPubKey), height, tx.is_coinbase()))
                    for n, o in enumerate(tx.vout)
                    if o.scriptPubKey[:1] != b"\x6a"
                )
        self._cache = (self.active[-1], utxo, txindex)
        return utxo, txindex

    def _entry(self, blockhash) -> _Entry:
        key = parse_hash(blockhash, "blockhash")
        if key not in self.index:
            raise RPCError(-5, "Block not found")
        return self.index[key]

    def _on_chain(self, e: _Entry) -> bool:
        return e.height < len(self.active) and self.active[e.height] == e.hash

    def _mtp(self, e: _Entry) -> int:
        times = []
        while e is not None and len(times) < 11:
            times.append(e.block.nTime)
            e = self.index.get(e.prev)
        return sorted(times)[len(times) // 2]  # Core's GetMedianTimePast

    def _fee(self, tx) -> int:
        return sum(self.txs[i.prevout.hash].vout[i.prevout.n].nValue for i in tx.vin) - sum(o.nValue for o in tx.vout)

    def _activate_best(self):
        """Switch to the most-work valid chain (first seen wins ties) and fix up the mempool."""
        ok = {}
        for e in self.index.values():
            ok[e.hash] = e.hash not in self.invalid and (e.prev is None or ok[e.prev])
        e, chain = max((e for e in self.index.values() if ok[e.hash]), key=lambda e: (e.height, -e.seq)), []
        while e is not None:
            chain.append(e.hash)
            e = self.index.get(e.prev)
        chain.reverse()
        fork = next(  # first height where the chains differ
            (i for i, (a, b) in enumerate(zip(chain, self.active, strict=False)) if a != b),
            min(len(chain), len(self.active)),
        )
        back = [
            (tx.GetTxid(), (tx, int(time.time())))  # disconnected blocks' txs, ahead of the old mempool
            for bh in self.active[fork:]
            for tx in self.index[bh].block.vtx[1:]
        ]
        self.active = chain
        self.txindex.update((tx.GetTxid(), bh) for bh in chain[max(fork, 1) :] for tx in self.index[bh].block.vtx)
        self._rebuild_mempool(back + list(self.mempool.items()))

    def _rebuild_mempool(self, candidates):
        """Keep, in order, the candidates that are unconfirmed, final, and spend available unspent coins."""
        utxo, txindex = self._view()
        tip, spent, pool = len(self.active) - 1, set(), {}
        for txid, item in candidates:
            ops = [(i.prevout.hash, i.prevout.n) for i in item[0].vin]
            if (
                txid in txindex
                or txid in pool
                or tip < item[0].nLockTime < 500_000_000
                or any(op in spent or (op not in utxo and op[0] not in pool) for op in ops)
            ):
                continue
            spent.update(ops)
            pool[txid] = item
        self.mempool = pool

    def _mine_one(self, spk: CScript) -> bytes:
        tip, txs = self.index[self.active[-1]], [tx for tx, _ in self.mempool.values()]
        self._extranonce += 1
        wtxids = [b"\x00" * 32] + [tx.GetHash() for tx in txs]  # GetHash() of a tx includes the witness
        commitment = Hash(CBlock.build_merkle_tree_from_txids(wtxids)[-1] + b"\x00" * 32)
        reward = (50 * COIN >> (tip.height + 1) // HALVING_INTERVAL) + sum(map(self._fee, txs))
        coinbase = CMutableTransaction(
            [CMutableTxIn(COutPoint(), CScript([tip.height + 1, self._extranonce.to_bytes(4, "little")]))],
            [CMutableTxOut(reward, spk), CMutableTxOut(0, CScript(b"\x6a\x24\xaa\x21\xa9\xed" + commitment))],
            nVersion=2,
        )
        coinbase.wit = CTxWitness([CTxInWitness(CScriptWitness([b"\x00" * 32]))])
        vtx = [CTransaction.from_tx(coinbase), *txs]
        root, ntime, nonce = CBlock.build_merkle_tree_from_txs(vtx)[-1], max(self._mtp(tip) + 1, int(time.time())), 0
        header = CBlockHeader(BLOCK_VERSION, tip.hash, root, ntime, BITS, nonce)
        while int.from_bytes(header.GetHash(), "little") > TARGET:  # regtest: about every other nonce works
            nonce += 1
            header = CBlockHeader(BLOCK_VERSION, tip.hash, root, ntime, BITS, nonce)
        block = CBlock(BLOCK_VERSION, tip.hash, root, ntime, BITS, nonce, vtx)
        self.index[block.GetHash()] = _Entry(block, tip.height + 1, tip.hash, len(self.index))
        self.txs.update((tx.GetTxid(), tx) for tx in vtx)
        self._activate_best()
        return block.GetHash()

    def _wallet_coins(self) -> dict:
        """Spendable wallet coins: mature confirmed ones plus unconfirmed change, minus mempool spends."""
        utxo, tip = self._view()[0], len(self.active) - 1
        coins = {op: c for op, c in utxo.items() if c[1] in self.keys and (not c[3] or tip - c[2] >= COINBASE_MATURITY)}
        for txid, (tx, _) in self.mempool.items():
            coins.update(
                ((txid, n), (o.nValue, bytes(o.scriptPubKey), None, False))
                for n, o in enumerate(tx.vout)
                if bytes(o.scriptPubKey) in self.keys
            )
        for tx, _ in self.mempool.values():
            for i in tx.vin:
                coins.pop((i.prevout.hash, i.prevout.n), None)
        return coins

    def _build_payment(self, spk: CScript, sats: int) -> CTransaction:
        chosen, total = [], 0
        for op, coin in sorted(self._wallet_coins().items(), key=lambda kv: (kv[1][2] is None, kv[1][2] or 0, kv[0])):
            chosen.append((op, coin))  # oldest confirmed coins first
            total += coin[0]
            fee = (11 + 68 * len(chosen) + 18 + len(spk) + len(self.change_script)) * FEE_RATE  # vsize upper bound
            if total >= sats + fee:
                break
        else:
            raise RPCError(-6, "Insufficient funds")
        outs = [CMutableTxOut(sats, spk)] + (
            [CMutableTxOut(total - sats - fee, self.change_script)] if total - sats - fee >= 1000 else []
        )  # dust change goes to the fee
        tx = CMutableTransaction(
            [CMutableTxIn(COutPoint(*op), nSequence=0xFFFFFFFD) for op, _ in chosen],
            outs,
            nLockTime=len(self.active) - 1,
            nVersion=2,
        )
        return self._sign(tx, [(coin[0], coin[1]) for _, coin in chosen])

    def _sign(self, tx: CMutableTransaction, coins: list) -> CTransaction:
        """Sign every input of ``tx``; ``coins``: (value, scriptPubKey) of each input's coin, all the wallet's."""
        witnesses = []
        for i, (value, coin_spk) in enumerate(coins):
            key = self.keys[coin_spk]
            code = CScript([OP_DUP, OP_HASH160, Hash160(key.pub), OP_EQUALVERIFY, OP_CHECKSIG])
            sighash = SignatureHash(code, tx, i, SIGHASH_ALL, amount=value, sigversion=SIGVERSION_WITNESS_V0)
            witnesses.append(CTxInWitness(CScriptWitness([key.sign(sighash) + bytes([SIGHASH_ALL]), key.pub])))
        tx.wit = CTxWitness(witnesses)
        return CTransaction.from_tx(tx)

    def _tx_json(self, tx, with_fee: bool) -> dict:
        weight, vin = tx.calc_weight(), []
        for n, txin in enumerate(tx.vin):
            item = (
                {"coinbase": txin.scriptSig.hex()}
                if tx.is_coinbase()
                else {
                    "txid": b2lx(txin.prevout.hash),
                    "vout": txin.prevout.n,
                    "scriptSig": {"asm": script_asm(txin.scriptSig), "hex": txin.scriptSig.hex()},
                }
            )
            wit = tx.wit.vtxinwit[n].scriptWitness.stack if n < len(tx.wit.vtxinwit) else ()
            vin.append(
                {**item, **({"txinwitness": [bytes(w).hex() for w in wit]} if wit else {}), "sequence": txin.nSequence}
            )
        vout = [
            {"value": btc(o.nValue), "n": n, "scriptPubKey": script_pubkey_json(o.scriptPubKey)}
            for n, o in enumerate(tx.vout)
        ]
        return {
            "txid": b2lx(tx.GetTxid()),
            "hash": b2lx(tx.GetHash()),
            "version": tx.nVersion,
            "size": len(tx.serialize()),
            "vsize": (weight + 3) // 4,
            "weight": weight,
            "locktime": tx.nLockTime,
            "vin": vin,
            "vout": vout,
            **({"fee": btc(self._fee(tx))} if with_fee and not tx.is_coinbase() else {}),
            "hex": b2x(tx.serialize()),
        }

    def _header_json(self, e: _Entry) -> dict:
        b, on_chain = e.block, self._on_chain(e)
        out = {
            "hash": b2lx(e.hash),
            "confirmations": len(self.active) - e.height if on_chain else -1,
            "height": e.height,
            "version": b.nVersion,
            "versionHex": f"{b.nVersion:08x}",
            "merkleroot": b2lx(b.hashMerkleRoot),
            "time": b.nTime,
            "mediantime": self._mtp(e),
            "nonce": b.nNonce,
            "bits": f"{b.nBits:08x}",
            "difficulty": DIFFICULTY,
            "chainwork": "%064x" % (2 * e.height + 2),
            "nTx": len(b.vtx),
        }
        if e.prev is not None:
            out["previousblockhash"] = b2lx(e.prev)
        if on_chain and e.height + 1 < len(self.active):
            out["nextblockhash"] = b2lx(self.active[e.height + 1])
        return out

    def rpc_getblockchaininfo(self):
        tip = self._header_json(self.index[self.active[-1]])
        return {
            "chain": "regtest",
            "blocks": tip["height"],
            "headers": tip["height"],
            "bestblockhash": tip["hash"],
            "difficulty": DIFFICULTY,
            "time": tip["time"],
            "mediantime": tip["mediantime"],
            "verificationprogress": 1,
            "initialblockdownload": False,
            "chainwork": tip["chainwork"],
            "size_on_disk": sum(len(e.block.serialize()) for e in self.index.values()),
            "pruned": False,
            "warnings": "",
        }

    def rpc_getblockcount(self):
        return len(self.active) - 1

    def rpc_getbestblockhash(self):
        return b2lx(self.active[-1])

    def rpc_getblockhash(self, height):
        if isinstance(height, bool) or not isinstance(height, int):
            raise RPCError(-3, "JSON value is not an integer as expected")
        if not 0 <= height < len(self.active):
            raise RPCError(-8, "Block height out of range")
        return b2lx(self.active[height])

    def rpc_getblockheader(self, blockhash, verbose=True):
        e = self._entry(blockhash)
        return self._header_json(e) if verbose else b2x(e.block.get_header().serialize())

    def rpc_getblock(self, blockhash, verbosity=1):
        e, verbosity = self._entry(blockhash), int(verbosity)  # Core also takes true/false
        if verbosity > 2:
            raise RPCError(-8, "the double implements getblock verbosity 0, 1 and 2 only")
        if verbosity <= 0:
            return b2x(e.block.serialize())
        return {
            **self._header_json(e),
            "strippedsize": len(e.block.serialize({"include_witness": False})),
            "size": len(e.block.serialize()),
            "weight": e.block.GetWeight(),
            "tx": [b2lx(tx.GetTxid()) if verbosity == 1 else self._tx_json(tx, True) for tx in e.block.vtx],
        }

    def rpc_getrawmempool(self, verbose=False, mempool_sequence=False):
        if verbose or mempool_sequence:
            raise RPCError(-8, "the double implements getrawmempool without verbose/mempool_sequence only")
        return [b2lx(txid) for txid in self.mempool]

    def rpc_getrawtransaction(self, txid, verbosity=0, blockhash=None):
        key, verbosity = parse_hash(txid, "parameter 1"), int(verbosity or 0)  # Core also takes true/false
        if verbosity > 1:
            raise RPCError(-8, "the double implements getrawtransaction verbosity 0 and 1 only")
        if key == GENESIS.vtx[0].GetTxid():
            raise RPCError(
                -5, "The genesis block coinbase is not considered an ordinary transaction and cannot be retrieved"
            )
        entry = self._entry(blockhash) if blockhash is not None else None
        if entry is None and key in self.mempool:
            tx = self.mempool[key][0]
        else:
            entry = entry or self.index.get(self._view()[1].get(key) or self.txindex.get(key))
            tx = next((t for t in entry.block.vtx if t.GetTxid() == key), None) if entry else None
            if tx is None:
                raise RPCError(
                    -5,
                    (
                        "No such mempool or blockchain transaction"
                        if blockhash is None
                        else "No such transaction found in the provided block"
                    )
                    + ". Use gettransaction for wallet transactions.",
                )
        if not verbosity:
            return b2x(tx.serialize())
        out = {
            **({"in_active_chain": self._on_chain(entry)} if blockhash is not None else {}),
            **self._tx_json(tx, False),
        }
        if entry is not None:
            out.update(blockhash=b2lx(entry.hash), confirmations=0)
            if self._on_chain(entry):
                out.update(
                    confirmations=len(self.active) - entry.height, time=entry.block.nTime, blocktime=entry.block.nTime
                )
        return out

    def rpc_generatetoaddress(self, nblocks, address, maxtries=1000000):
        try:
            spk = address_to_script(address)
        except RPCError:
            raise RPCError(-5, "Error: Invalid address") from None
        return [b2lx(self._mine_one(spk)) for _ in range(int(nblocks))]

    def rpc_invalidateblock(self, blockhash):
        self.invalid.add(self._entry(blockhash).hash)
        self.invalid.discard(GENESIS.GetHash())
        self._activate_best()

    def rpc_reconsiderblock(self, blockhash):
        """Like Core: clear the flag on the block, its ancestors and its descendants, then pick the best chain."""

        def lineage(e):
            while e is not None:
                yield e.hash
                e = self.index.get(e.prev)

        target = self._entry(blockhash)
        ancestors = set(lineage(target))
        self.invalid = {h for h in self.invalid if h not in ancestors and target.hash not in lineage(self.index[h])}
        self._activate_best()

    def rpc_getnewaddress(self, label="", address_type=None):
        key = CKey(hashlib.sha256(self.seed + b"/%d" % len(self.keys)).digest())
        self.keys[bytes(CScript([0, Hash160(key.pub)]))] = key
        return classify(CScript([0, Hash160(key.pub)]))[1]

    def rpc_getbalance(self, *_ignored):
        return btc(sum(c[0] for c in self._wallet_coins().values()))

    def rpc_sendtoaddress(self, address, amount, *_ignored):
        try:
            spk, sats = address_to_script(address), to_sats(amount)
        except RPCError as exc:
            raise RPCError(-5, f"Invalid Bitcoin address: {address}") if exc.code == -5 else exc from None
        if sats <= 0:
            raise RPCError(-3, "Invalid amount for send")
        tx = self._build_payment(spk, sats)
        self.txs[tx.GetTxid()] = tx
        self.mempool[tx.GetTxid()] = (tx, int(time.time()))
        return b2lx(tx.GetTxid())

    def rpc_bumpfee(self, txid, options=None):
        """Core's wallet bumpfee (BIP125): the same inputs and recipients, a higher fee taken from the change;
        the original and its mempool descendants are replaced. Returns the new txid and both fees."""
        if (key := parse_hash(txid, "txid")) not in self.mempool:
            raise RPCError(-5, "Invalid or non-wallet transaction id")
        old = self.mempool[key][0]
        coins = [
            (
                self.txs[i.prevout.hash].vout[i.prevout.n].nValue,
                bytes(self.txs[i.prevout.hash].vout[i.prevout.n].scriptPubKey),
            )
            for i in old.vin
        ]
        if any(spk not in self.keys for _, spk in coins):
            raise RPCError(-5, "Transaction contains inputs that don't belong to this wallet")
        change = [n for n, o in enumerate(old.vout) if bytes(o.scriptPubKey) == bytes(self.change_script)]
        extra = (old.calc_weight() + 3) // 4 * FEE_RATE  # the fee rate doubles (Core: at least +1 sat/vB)
        if not change or old.vout[change[-1]].nValue - extra < 1000:
            raise RPCError(-4, "Unable to create transaction. Change output is too small to bump the fee")
        outs = [
            CMutableTxOut(o.nValue - (extra if n == change[-1] else 0), o.scriptPubKey) for n, o in enumerate(old.vout)
        ]
        tx = self._sign(
            CMutableTransaction(
                [CMutableTxIn(i.prevout, nSequence=0xFFFFFFFD) for i in old.vin],
                outs,
                nLockTime=old.nLockTime,
                nVersion=2,
            ),
            coins,
        )
        self.txs[tx.GetTxid()] = tx
        self._rebuild_mempool(
            [(t, item) for t, item in self.mempool.items() if t != key] + [(tx.GetTxid(), (tx, int(time.time())))]
        )
        return {"txid": b2lx(tx.GetTxid()), "origfee": btc(self._fee(old)), "fee": btc(self._fee(tx)), "errors": []}

    def rpc_sendrawtransaction(self, hexstring, maxfeerate=None):
        """Core's broadcast of a signed transaction (here: one this node has signed before, such as
        a wallet payment dropped from the mempool and re-broadcast); returns its txid."""
        try:
            tx = CTransaction.deserialize(bytes.fromhex(hexstring))
        except (ValueError, TypeError) as exc:
            raise RPCError(-22, f"TX decode failed: {exc}") from None
        txid = tx.GetTxid()
        if txid in self._view()[1]:
            raise RPCError(-27, "Transaction already in block chain")
        if txid in self.mempool:
            return b2lx(txid)
        if any(i.prevout.hash not in self.txs for i in tx.vin):
            raise RPCError(-25, "bad-txns-inputs-missingorspent")
        self.txs[txid] = tx
        self._rebuild_mempool([*list(self.mempool.items()), (txid, (tx, int(time.time())))])
        if txid not in self.mempool:
            raise RPCError(-26, "txn-mempool-conflict")
        return b2lx(txid)

    def rpc_x_dropfrommempool(self, txid):
        """Not a Core RPC: evict txid and its mempool descendants; returns the evicted txids."""
        if (key := parse_hash(txid, "txid")) not in self.mempool:
            raise RPCError(-5, "Transaction not in mempool")
        before = list(self.mempool)
        self._rebuild_mempool([(t, item) for t, item in self.mempool.items() if t != key])
        return [b2lx(t) for t in before if t not in self.mempool]

    def dispatch(self, method, params):
        fn = getattr(self, "rpc_" + method, None) if isinstance(method, str) else None
        if fn is None:
            raise RPCError(-32601, "Method not found")
        try:
            sig = inspect.signature(fn)
            args = sig.bind(**params) if isinstance(params, dict) else sig.bind(*params)  # named or positional
        except TypeError as exc:
            raise RPCError(-1, f"{method}: {exc}") from None
        with self.lock:
            return fn(*args.args, **args.kwargs)


# ---------------------------------------------------------------- HTTP server
class _Handler(BaseHTTPRequestHandler):
    protocol_version, disable_nagle_algorithm = "HTTP/1.1", True  # keep-alive without 40 ms ACK stalls

    def log_message(self, *args):
        pass

    def _one(self, req):
        """(HTTP status, reply) for one request. Legacy (1.0) errors use HTTP 404/500 like Core; 2.0 uses 200."""
        if not isinstance(req, dict):
            return 400, {"result": None, "error": {"code": -32600, "message": "Invalid Request object"}, "id": None}
        v2 = req.get("jsonrpc") == "2.0"
        try:
            reply, status = {"result": self.server.chain.dispatch(req.get("method"), req.get("params") or [])}, 200
        except RPCError as exc:
            reply, status = {"error": {"code": exc.code, "message": exc.message}}, 404 if exc.code == -32601 else 500
        except Exception as exc:  # noqa: BLE001 - Core reports unexpected failures as RPC_MISC_ERROR
            reply, status = {"error": {"code": -1, "message": str(exc)}}, 500
        if v2:
            return 200, {"jsonrpc": "2.0", **reply, "id": req.get("id")}
        return status, {"result": reply.get("result"), "error": reply.get("error"), "id": req.get("id")}

    def do_POST(self):
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)), parse_float=Decimal)
        except ValueError:
            status, reply = 500, {"result": None, "error": {"code": -32700, "message": "Parse error"}, "id": None}
        else:
            status, reply = (200, [self._one(r)[1] for r in req]) if isinstance(req, list) else self._one(req)
        body = dumps(reply).encode() + b"\n"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class BitcoinDouble:
    """The server: ``with BitcoinDouble() as node: BitcoinRPC(node.url)``; port 0 picks a free port."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, chain: RegtestChain | None = None):
        self.chain = chain or RegtestChain()
        self.server = ThreadingHTTPServer((host, port), _Handler)
        self.server.chain = self.chain
        self.host, self.port = self.server.server_address[:2]
        self.url = f"http://kassa:kassa@{self.host}:{self.port}/"  # any credentials are accepted
        self._thread = None

    def start(self) -> BitcoinDouble:
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
            self._thread = None
        self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
