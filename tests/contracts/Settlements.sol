// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

// Settlement addresses that are contracts, for the sweeper's tests and the stipend's
// measurement (bench/settlement_gas.py). Each receives the native coin the way a real
// kind of wallet does, or refuses it the way a broken or hostile one would.

/// A settlement contract whose `receive` burns every unit of gas it is given.
contract GasBurner {
    receive() external payable {
        while (true) {}
    }
}

/// A settlement contract that refuses the native coin.
contract Refuser {
    error NoCoin();

    receive() external payable {
        revert NoCoin();
    }
}

/// A settlement contract whose `receive` does real work: it needs `threshold` gas and
/// reverts, cheaply, with less. A flush must not settle on a gas limit that starves it.
contract NeedsGas {
    uint256 public immutable threshold;

    error NotEnoughGas();

    constructor(uint256 threshold_) {
        threshold = threshold_;
    }

    receive() external payable {
        if (gasleft() < threshold) revert NotEnoughGas();
    }
}

/// A settlement contract that takes the coin when given little gas and burns everything
/// when given more than `threshold`: behind a forwarder that passes on all its gas, gas
/// estimation finds a limit at which it takes the coin, and the sweep sent with a margin
/// above that limit runs out of gas on chain, again and again.
contract BurnsWhenRich {
    uint256 public immutable threshold;

    constructor(uint256 threshold_) {
        threshold = threshold_;
    }

    receive() external payable {
        if (gasleft() > threshold) {
            while (true) {}
        }
    }
}

/// Safe's receive path without Safe: a proxy that reads its singleton from storage slot 0
/// and delegates every call to it (SafeProxy), and a singleton whose `receive` emits
/// `SafeReceived` (Safe 1.3/1.4's NativeCurrencyPaymentFallback).
contract SafeLikeProxy {
    address internal singleton;

    constructor(address singleton_) {
        singleton = singleton_;
    }

    fallback() external payable {
        assembly {
            let target := and(sload(0), 0xffffffffffffffffffffffffffffffffffffffff)
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), target, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            if iszero(ok) { revert(0, returndatasize()) }
            return(0, returndatasize())
        }
    }
}

contract SafeLikeSingleton {
    event SafeReceived(address indexed sender, uint256 value);

    receive() external payable {
        emit SafeReceived(msg.sender, msg.value);
    }
}

/// An ERC-4337 account's receive path (SimpleAccount, Coinbase Smart Wallet, Kernel): an
/// ERC-1967 proxy reading its implementation from the standard slot, delegating to an
/// account whose `receive` is empty. The transparent variant (OpenZeppelin 4's
/// TransparentUpgradeableProxy) reads the admin slot first, and its account emits an event
/// (Biconomy's SmartAccount does): the heaviest common shape.
contract ERC1967Proxy {
    bytes32 internal constant IMPLEMENTATION_SLOT = 0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc;
    bytes32 internal constant ADMIN_SLOT = 0xb53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103;
    bool internal immutable transparent;

    constructor(address implementation, bool transparent_) {
        transparent = transparent_;
        assembly {
            sstore(IMPLEMENTATION_SLOT, implementation)
        }
        if (transparent_) {
            address admin = msg.sender;
            assembly {
                sstore(ADMIN_SLOT, admin)
            }
        }
    }

    fallback() external payable {
        if (transparent) {
            address admin;
            assembly {
                admin := sload(ADMIN_SLOT)
            }
            require(msg.sender != admin, "admin cannot fallback to proxy target");
        }
        assembly {
            let target := sload(IMPLEMENTATION_SLOT)
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), target, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            if iszero(ok) { revert(0, returndatasize()) }
            return(0, returndatasize())
        }
    }
}

contract SmartAccount {
    receive() external payable {}
}

contract EmittingSmartAccount {
    event NativeReceived(address indexed sender, uint256 value);

    receive() external payable {
        emit NativeReceived(msg.sender, msg.value);
    }
}

/// The measure: the least gas `to` needs to take `value` from a contract's call (the
/// 2,300 a value transfer adds on top is not counted). Each `probe` runs in its own
/// `eth_call`, so every account and slot `to` touches is cold, as in a real sweep.
contract GasProbe {
    function probe(address to, uint256 gasGiven) external payable returns (bool ok) {
        (ok, ) = to.call{value: msg.value, gas: gasGiven}("");
    }
}
