"""Network and token registry, loaded from ``networks.json`` plus settings.

Per network ``NAME`` the settings mapping may provide ``NAME_RPC_URLS`` (comma-separated
nodes, in order of preference) or ``NAME_RPC_URL`` (one node; empty means unset; a network
without a node is not live-enabled), ``NAME_RPC_QUORUM`` (how many of those nodes must
agree on a block before a transfer in it is confirmed, 1 by default) and
``NAME_CONFIRMATIONS`` (a positive integer overriding the file's default) and, for an EVM
network, ``NAME_WS_URL`` (a node's WebSocket endpoint: the chain watcher learns new blocks
from its ``eth_subscribe("newHeads")`` instead of waiting for its next poll; a development
chain's defaults to its first RPC URL with ``ws://``, as anvil serves both on one port). A Bitcoin-family
network (kind ``bitcoin``: Bitcoin, Litecoin) names the chain its nodes must be on (``chain``:
Bitcoin Core's ``main``, ``test``, ``signet``, ``regtest``; by default from its ``bech32_hrp``)
and the chain family of the merchant's key that derives its addresses (``wallet_chain``:
``bitcoin`` by default, ``litecoin``; an EVM network's is ``evm``).
An EVM network's ``forwarder_factory`` is where the forwarder factory lives (the same
address on every chain, see ``chains.forwarder``); without one, forwarder settlement is
not offered there. A network marked ``needs_rpc_url`` (a second development chain) exists
only while its RPC URL is set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from kassa_common.chains.evm import checksummed

DEFAULT_PATH = Path(__file__).with_name("networks.json")
KINDS = ("evm", "bitcoin")


@dataclass(frozen=True)
class Token:
    """A payable asset on one network; ``contract`` is None for the native coin."""

    symbol: str
    contract: str | None  # EIP-55 checksummed
    decimals: int
    native: bool

    def to_public(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "contract": self.contract, "decimals": self.decimals, "native": self.native}


@dataclass(frozen=True)
class Network:
    """One chain we accept payments on."""

    name: str
    kind: str  # "evm" | "bitcoin"
    chain_id: int | None
    required_confirmations: int
    block_time: float
    rpc_url: str | None
    tokens: tuple[Token, ...]
    bech32_hrp: str | None = None
    dev: bool = False
    forwarder_factory: str | None = None  # EVM: the ForwarderFactory's address (EIP-55)
    rpc_urls: tuple[str, ...] = ()  # every node, in order of preference (``rpc_url`` is the first)
    rpc_quorum: int = 1  # nodes that must agree on a block before a transfer in it is confirmed
    bitcoin_chain: str | None = None  # Bitcoin: what ``getblockchaininfo`` must say ("main", "regtest")
    display_name: str = ""  # what people read ("Base"); the name when the data gives none
    explorer_tx_url: str | None = None  # a public explorer's page of a transaction: "...{hash}"
    ws_url: str | None = None  # EVM: a node's WebSocket endpoint, for new heads (NAME_WS_URL)
    wallet_chain: str = ""  # whose keys derive its addresses: evm, bitcoin, litecoin (the kind if empty)

    @property
    def key_chain(self) -> str:
        """The chain family of the merchant's wallet paying this network (``Wallet.chain``)."""
        return self.wallet_chain or self.kind

    @property
    def label(self) -> str:
        """The network's name as people read it."""
        return self.display_name or self.name

    def explorer_url(self, tx_hash: str | None) -> str | None:
        """The public explorer's page of ``tx_hash`` (None: no explorer, or no hash)."""
        if not (tx_hash and self.explorer_tx_url):
            return None
        return self.explorer_tx_url.replace("{hash}", tx_hash)

    @property
    def nodes(self) -> tuple[str, ...]:
        """The RPC URLs of this network's nodes (none: not live-enabled)."""
        return self.rpc_urls or ((self.rpc_url,) if self.rpc_url else ())

    def token(self, symbol: str) -> Token | None:
        """The token with this symbol (case-insensitive), or None."""
        wanted = symbol.upper()
        return next((t for t in self.tokens if t.symbol.upper() == wanted), None)

    @property
    def live_enabled(self) -> bool:
        """True when an RPC endpoint is configured."""
        return bool(self.rpc_url)

    def to_public(self) -> dict[str, Any]:
        """JSON-safe description for API clients (no RPC URL)."""
        return {
            "name": self.name,
            "display_name": self.label,
            "kind": self.kind,
            "chain_id": self.chain_id,
            "required_confirmations": self.required_confirmations,
            "live_enabled": self.live_enabled,
            "tokens": [t.to_public() for t in self.tokens],
        }


class Registry:
    """Networks by name (case-insensitive lookup), iterated in file order."""

    def __init__(self, networks: tuple[Network, ...] | list[Network]):
        self._networks = tuple(networks)
        self._by_name: dict[str, Network] = {}
        for net in self._networks:
            key = net.name.upper()
            if key in self._by_name:
                raise ValueError(f"duplicate network name {net.name!r}")
            self._by_name[key] = net

    def get(self, name: str) -> Network | None:
        return self._by_name.get(name.upper()) if isinstance(name, str) else None

    def __iter__(self) -> Iterator[Network]:
        return iter(self._networks)

    def __len__(self) -> int:
        return len(self._networks)


def _checksummed(contract: str | None, where: str) -> str | None:
    if contract is None:
        return None
    try:
        return checksummed(contract)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _token(raw: Mapping[str, Any], where: str) -> Token:
    symbol = str(raw["symbol"])
    where = f"{where} token {symbol}"
    decimals = raw["decimals"]
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 36:
        raise ValueError(f"{where}: decimals must be an integer 0..36")
    native = bool(raw.get("native", False))
    contract = _checksummed(raw.get("contract"), where)
    if native != (contract is None):
        raise ValueError(f"{where}: a native token has no contract and a contract token is not native")
    return Token(symbol=symbol, contract=contract, decimals=decimals, native=native)


def _count(env: Mapping[str, str], var: str, default: int) -> int:
    """``var``'s positive integer, ``default`` when it is unset or empty."""
    value = (env.get(var) or "").strip()
    if not value:
        return default
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{var} must be a positive integer, got {value!r}")
    return count


# bech32 prefix -> the chain name Bitcoin Core (and litecoind) reports
BITCOIN_CHAINS = {"bc": "main", "tb": "test", "bcrt": "regtest", "ltc": "main", "tltc": "test", "rltc": "regtest"}
WALLET_CHAINS = {"evm": ("evm",), "bitcoin": ("bitcoin", "litecoin")}  # kind -> its wallets' chain families


def _rpc_urls(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """``NAME_RPC_URLS`` (comma-separated), else ``NAME_RPC_URL``; duplicates dropped, order kept.
    Messages never repeat a URL: it may carry an API key."""
    listed = (env.get(f"{name}_RPC_URLS") or "").strip()
    raw = listed.split(",") if listed else [env.get(f"{name}_RPC_URL") or ""]
    urls = tuple(dict.fromkeys(u.strip() for u in raw if u.strip()))
    for u in urls:
        if "://" not in u:
            raise ValueError(f"{name}_RPC_URL{'S' if listed else ''}: every node must be a URL (http://… or https://…)")
    return urls


def _quorum(env: Mapping[str, str], name: str, nodes: int) -> int:
    var = f"{name}_RPC_QUORUM"
    quorum = _count(env, var, 1)
    if nodes and quorum > nodes:
        raise ValueError(f"{var}={quorum} needs at least {quorum} nodes in {name}_RPC_URLS, which lists {nodes}")
    return quorum


def _network(raw: Mapping[str, Any], env: Mapping[str, str]) -> Network:
    name = str(raw["name"])
    kind = raw["kind"]
    if kind not in KINDS:
        raise ValueError(f"network {name}: kind must be one of {KINDS}, got {kind!r}")
    hrp: str | None = raw.get("bech32_hrp")
    if kind == "bitcoin" and not hrp:
        raise ValueError(f"network {name}: bitcoin networks need a bech32_hrp")
    wallet_chain = str(raw.get("wallet_chain") or kind)
    if wallet_chain not in WALLET_CHAINS[kind]:
        raise ValueError(f"network {name}: a {kind} network's wallet_chain is one of {WALLET_CHAINS[kind]}")
    factory = _checksummed(raw.get("forwarder_factory"), f"network {name} forwarder_factory")
    if factory is not None and kind != "evm":
        raise ValueError(f"network {name}: only EVM networks have a forwarder_factory")
    tokens = tuple(_token(t, f"network {name}") for t in raw["tokens"])
    symbols = [t.symbol.upper() for t in tokens]
    if len(set(symbols)) != len(symbols):
        raise ValueError(f"network {name}: duplicate token symbol")
    urls = _rpc_urls(env, name)
    ws_url = _ws_url(env, name, kind, urls if raw.get("dev") else ())
    bitcoin_chain = (raw.get("chain") or BITCOIN_CHAINS.get(hrp or "")) if kind == "bitcoin" else None
    return Network(
        name=name,
        kind=kind,
        chain_id=raw.get("chain_id"),
        required_confirmations=_count(env, f"{name}_CONFIRMATIONS", int(raw["required_confirmations"])),
        block_time=float(raw["block_time"]),
        rpc_url=urls[0] if urls else None,
        tokens=tokens,
        bech32_hrp=hrp,
        dev=bool(raw.get("dev", False)),
        forwarder_factory=factory,
        rpc_urls=urls,
        rpc_quorum=_quorum(env, name, len(urls)),
        bitcoin_chain=bitcoin_chain,
        display_name=str(raw.get("display_name") or ""),
        explorer_tx_url=raw.get("explorer_tx_url"),
        ws_url=ws_url,
        wallet_chain=wallet_chain,
    )


def _ws_url(env: Mapping[str, str], name: str, kind: str, derive_from: tuple[str, ...]) -> str | None:
    """``NAME_WS_URL``; else, for a development chain (``derive_from``: its RPC URLs), the
    first RPC URL with ``ws://`` (anvil serves JSON-RPC over HTTP and WebSocket on one port)."""
    url = (env.get(f"{name}_WS_URL") or "").strip()
    if url:
        if kind != "evm":
            raise ValueError(f"{name}_WS_URL: only EVM networks follow new heads over WebSocket")
        if not url.startswith(("ws://", "wss://")):
            raise ValueError(f"{name}_WS_URL must be a WebSocket URL (ws://… or wss://…)")
        return url
    if kind == "evm" and derive_from and derive_from[0].startswith(("http://", "https://")):
        return "ws" + derive_from[0][len("http") :]
    return None


def load_registry(env: Mapping[str, str], path: str | None = None) -> Registry:
    """Build the registry from the JSON file at ``path`` and the settings ``env``."""
    data = json.loads(Path(path or DEFAULT_PATH).read_text(encoding="utf-8"))
    networks = [_network(raw, env) for raw in data["networks"]]
    return Registry(
        [n for n, raw in zip(networks, data["networks"], strict=True) if n.rpc_url or not raw.get("needs_rpc_url")]
    )


@lru_cache(maxsize=1)
def shipped() -> Registry:
    """Every network of the shipped file, whatever the settings: for facts that need no
    setting (a token's decimals), where no settings are at hand."""
    data = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    return Registry([_network(raw, {}) for raw in data["networks"]])
