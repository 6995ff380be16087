"""Forwarder settlement, off-chain: where each payment's deposit address is.

A merchant in forwarder mode gives one settlement address. Each payment's deposit address
is then the CREATE2 address of an EIP-1167 clone that ``ForwarderFactory`` (Solidity in
``contracts/``) would create for it, with the salt ``keccak256(abi.encode(settlement,
payment_salt))``: the settlement address is part of the deposit address, so the funds
there can only ever be flushed to it. Nothing is deployed when a payment is created; the
sweeper deploys and flushes in one call once funds arrived.

The factory itself is created through the deterministic deployer with a fixed salt, so
its address (and its implementation's, and every deposit address) is the same on every
EVM chain: ``factory_address()`` computes it from the committed bytecode, and
``networks.json`` records it per network. ``deposit_address`` is the one function that
says where a deposit is; the integration tests hold it to the factory's own view.

The compiled artifacts (ABI and bytecode) are package data in ``contracts/`` beside this
module, built from the sources by ``python -m kassa_dev.contracts``.
"""

from __future__ import annotations

import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from eth_utils import keccak

from kassa_common.chains.evm import checksummed, create2_address, create_address

ARTIFACTS = Path(__file__).with_name("contracts")
# The CREATE2 deployer present at this address on anvil and on every supported network.
DETERMINISTIC_DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
FACTORY_SALT = bytes(32)
# topic 0 of the forwarder's Flushed(token, amount) and NotFlushed(token, amount) (what moved
# to the settlement address, what stayed in the deposit); token is the zero address for the native coin
FLUSHED_TOPIC = "0x" + keccak(text="Flushed(address,uint256)").hex()
NOT_FLUSHED_TOPIC = "0x" + keccak(text="NotFlushed(address,uint256)").hex()
NATIVE = "0x" + "00" * 20
# Forwarder.NATIVE_GAS: the gas a deposit gives its settlement address with the native coin
NATIVE_GAS = 50_000
# EIP-1167 minimal proxy creation code, around the implementation address.
_CLONE_PREFIX = bytes.fromhex("3d602d80600a3d3981f3363d3d373d3d3d363d73")
_CLONE_SUFFIX = bytes.fromhex("5af43d82803e903d91602b57fd5bf3")


def artifact_path(name: str) -> Path:
    return ARTIFACTS / f"{name}.json"


@cache
def artifact(name: str) -> dict[str, Any]:
    """The compiled ``Forwarder`` or ``ForwarderFactory``: ``abi``, ``bytecode``, …"""
    loaded: dict[str, Any] = json.loads(artifact_path(name).read_text())
    return loaded


# Factories of earlier Forwarder versions. A deposit address is fixed when its payment is
# created, under the factory of that day; one created before an upgrade is still flushed
# through its own factory (same ABI), so no deposit is stranded by a new contract.
# v1 (until issue 18): forwarded all its gas with the native coin.
PREVIOUS_FACTORIES = ("0x73e1075cf6B25666e469D7e8F21Bc4D05f8EDFc2",)


def factory_init_code() -> bytes:
    return bytes.fromhex(artifact("ForwarderFactory")["bytecode"][2:])


@cache
def factory_address() -> str:
    """Where the deterministic deployer puts the factory, on any chain."""
    return create2_address(DETERMINISTIC_DEPLOYER, FACTORY_SALT, keccak(factory_init_code()))


def implementation_address(factory: str) -> str:
    """The factory's Forwarder implementation: the first contract it creates (nonce 1)."""
    return create_address(factory, 1)


def payment_salt(payment_id: uuid.UUID) -> bytes:
    """A payment's salt: its id, left-padded to 32 bytes (so anyone with the id can flush)."""
    return payment_id.bytes.rjust(32, b"\0")


def deposit_address(factory: str, settlement: str, salt: bytes) -> str:
    """The deposit address of ``salt`` for ``settlement`` under ``factory`` (checksummed)."""
    clone_code = _CLONE_PREFIX + bytes.fromhex(implementation_address(factory)[2:]) + _CLONE_SUFFIX
    create2_salt = keccak(bytes.fromhex(settlement_address(settlement)[2:]).rjust(32, b"\0") + salt)
    return create2_address(factory, create2_salt, keccak(clone_code))


def settlement_address(text: str) -> str:
    """``text`` as a checksummed settlement address; ValueError for anything that is not one
    (not an address, a wrong EIP-55 checksum, or the zero address, where funds are burnt)."""
    address = checksummed((text or "").strip())
    if int(address, 16) == 0:
        raise ValueError("the zero address cannot receive funds")
    return address


def factory_of(address: str, settlement: str, salt: bytes, current: str) -> str | None:
    """The factory (``current``, or one of ``PREVIOUS_FACTORIES``) whose deposit of ``salt`` for
    ``settlement`` is ``address``; None if none is."""
    for factory in (current, *PREVIOUS_FACTORIES):
        if deposit_address(factory, settlement, salt).lower() == address.lower():
            return factory
    return None
