"""The chain watcher's scanner's surroundings in memory, for its tests: a chain (and one that
reorganises between two reads), a store, a bus, and a transfer to ALICE."""

from __future__ import annotations

import copy
import hashlib

from kassa_common.chains.networks import Network
from kassa_chain_watcher.chain import Block, ChainMoved, Found
from kassa_chain_watcher.store import State

NET = Network("TESTNET", "evm", 1, 3, 1.0, "http://node", ())
ALICE = "0xa11ce"


class FakeChain:
    def __init__(self, height: int = 10) -> None:
        self.salt = "main"
        self.pool: list[Found] = []
        self.chain: list[Block] = []
        self.extend(height + 1)

    def _hash(self, n: int, salt: str) -> str:
        return hashlib.sha256(f"{salt}:{n}".encode()).hexdigest()

    def extend(self, n: int = 1, transfers: list[Found] = ()) -> None:
        for i in range(n):
            number = len(self.chain)
            parent = self.chain[-1].hash if self.chain else "0" * 64
            self.chain.append(Block(number, self._hash(number, self.salt), parent, list(transfers) if i == 0 else []))

    def reorg(self, depth: int, transfers: list[Found] = ()) -> None:
        self.salt += "'"
        del self.chain[-depth:]
        self.extend(depth, transfers)

    def tip(self) -> int:
        return len(self.chain) - 1

    def blocks(self, start, end, watched):
        if end > self.tip():
            raise ChainMoved("beyond the tip")
        return [
            Block(b.number, b.hash, b.parent_hash, [f for f in b.transfers if f.to in watched])
            for b in self.chain[start : end + 1]
        ]

    def hashes(self, numbers):
        return {n: self.chain[n].hash for n in numbers if n <= self.tip()}

    def mempool(self, watched):
        return [f for f in self.pool if f.to in watched]

    def history(self, start, end, addresses, native=()):
        return [b for b in self.blocks(start, end, addresses) if b.transfers]


class MemoryStore:
    """Durable state = a deep copy taken at each write, like a committed transaction."""

    def __init__(self, keep: int = 10) -> None:
        self.keep, self.saved = keep, State()
        self.created: dict[str, int] = {}  # address -> Payment.created_block
        self.mempool = {}
        self.ledger: list[str] = []  # the reports ledger (chain_reports), in order

    def load(self) -> State:
        return copy.deepcopy(self.saved)

    def _save(self, state: State) -> None:
        self.saved = copy.deepcopy(state)

    def append(self, state, new, *, confirmed_through=None):
        for b in new:
            state.blocks[b.number] = b
        state.head = new[-1].number if new else state.head
        state.prune(self.keep)
        self._save(state)

    def confirm_through(self, state, height, *, scanned_at=None):
        state.confirmed_through, state.scanned_at = height, scanned_at or state.scanned_at
        self._save(state)

    def created_blocks(self, addresses):
        return {a: self.created.get(a) for a in addresses}

    def set_transfers(self, state, block):
        state.blocks[block.number] = block
        self._save(state)

    def record_reports(self, message_ids):
        self.ledger += [m for m in message_ids if m not in self.ledger]
        return len(self.ledger) if message_ids else None

    def reports_through(self):
        return len(self.ledger)

    def load_mempool(self):
        return dict(self.mempool)

    def save_mempool(self, before, after):
        self.mempool = dict(after)

    def rewind(self, state, fork):
        for n in [n for n in state.blocks if n > fork]:
            del state.blocks[n]
        state.head, state.confirmed_through = fork, min(state.confirmed_through, fork)
        self._save(state)


class Bus:
    """The transfer reports published (``messages``) and, apart, the watermarks."""

    def __init__(self) -> None:
        self.messages, self.watermarks, self.fail = [], [], False

    def __call__(self, messages):
        if self.fail:
            raise RuntimeError("broker down")
        for m in messages:
            (self.watermarks if m.routing_key == "chain.watermark" else self.messages).append(m)

    def kinds(self):
        return [(m.routing_key.rsplit(".", 1)[1], m.body["confirmations"]) for m in self.messages]


def transfer(tx="0xt1", units=5) -> Found:
    return Found(tx, 0, "USDC", ALICE, units)


class RacingChain(FakeChain):
    """A chain that reorganises right after the scanner checked its head's hash, before it
    reads the next blocks: the window the parent-hash check of a new batch closes."""

    def __init__(self, height: int = 10) -> None:
        super().__init__(height)
        self.after_hash_check = None  # called once, after hashes() answered

    def hashes(self, numbers):
        answer = super().hashes(numbers)
        hook, self.after_hash_check = self.after_hash_check, None
        if hook is not None:
            hook()
        return answer


def run_until_idle(scanner) -> None:
    for _ in range(50):
        if not scanner.tick():
            return
    raise AssertionError("the scanner never caught up")
