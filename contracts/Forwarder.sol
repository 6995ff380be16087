// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Forwarder
/// @notice The code behind every Kassa deposit address. Each deposit is an EIP-1167 clone
///         of this contract, created and initialised in one call by `ForwarderFactory`,
///         bound for ever to one settlement address: the merchant's. Whatever reaches the
///         clone (listed ERC-20 tokens, the native coin) can only ever leave towards that
///         address, whoever calls `flush`: Kassa's sweeper, the merchant, anyone.
/// @dev No function sends anything anywhere else, and nothing can change `settlement` once
///      set. A token that fails to move (paused, blacklisted recipient, not a token) and a
///      native coin the settlement address refuses are left here rather than reverting, so
///      one bad deposit never blocks a batch: every amount that moved is reported by a
///      `Flushed` event, every amount that stayed by a `NotFlushed` event.
contract Forwarder {
    /// @notice The factory that deployed this implementation: the only caller of `initialize`.
    address public immutable factory;
    /// @notice Where every flushed asset goes. Zero only on the implementation itself.
    address public settlement;

    /// @notice Gas the settlement address gets with the native coin (plus the 2,300 any
    ///         value transfer adds): what a Safe or an ERC-4337 account needs to run its
    ///         `receive` through its proxy, cold, eight times over (bench/settlement_gas.py
    ///         measures 4,029 for a Safe v1.4.1, 6,114 for the hungriest account shape), and
    ///         no more. A settlement contract that refuses the coin or burns gas costs a sweep
    ///         at most this much, and cannot make it run out of gas.
    uint256 public constant NATIVE_GAS = 50_000;
    /// @dev What must be left before the native call so that the whole `NATIVE_GAS` is on
    ///      offer after the call's own costs (cold account, value transfer, new account:
    ///      36,600 at most) and the 1/64 a call keeps back. Below it the flush reverts
    ///      instead of starving the settlement address: a transaction with too little gas
    ///      fails as a whole, so gas estimation cannot settle on a limit at which the coin
    ///      would be refused.
    uint256 private constant NATIVE_GAS_RESERVE = NATIVE_GAS + NATIVE_GAS / 63 + 40_000;

    /// @notice `amount` of `token` (the zero address for the native coin) went to `settlement`.
    event Flushed(address indexed token, uint256 amount);
    /// @notice `amount` of `token` stayed here: the token refused the transfer, or the
    ///         settlement address refused the native coin (or needed more than `NATIVE_GAS`).
    event NotFlushed(address indexed token, uint256 amount);

    error NotFactory();
    error AlreadyInitialized();
    error NoSettlement();
    error LowGas();

    constructor() {
        factory = msg.sender;
    }

    /// @notice Bind the clone to its settlement address; the factory calls it in the same
    ///         transaction that creates the clone, so no one can initialise it otherwise.
    function initialize(address settlement_) external {
        if (msg.sender != factory) revert NotFactory();
        if (settlement != address(0)) revert AlreadyInitialized();
        if (settlement_ == address(0)) revert NoSettlement();
        settlement = settlement_;
    }

    /// @notice Accept the native coin sent after deployment (before it, the address is plain).
    receive() external payable {}

    /// @notice Move the whole balance of each listed token, then the native balance, to
    ///         `settlement` (the latter with `NATIVE_GAS` gas, no more).
    function flush(address[] calldata tokens) external {
        address to = settlement;
        if (to == address(0)) revert NoSettlement();
        for (uint256 i = 0; i < tokens.length; ++i) {
            _flushToken(tokens[i], to);
        }
        uint256 native = address(this).balance;
        if (native > 0) {
            if (gasleft() < NATIVE_GAS_RESERVE) revert LowGas();
            (bool ok, ) = to.call{value: native, gas: NATIVE_GAS}("");
            if (ok) emit Flushed(address(0), native);
            else emit NotFlushed(address(0), native);
        }
    }

    /// @dev SafeERC20's rule: the call succeeds and returns nothing (from a contract, as
    ///      USDT on Ethereum does) or returns true.
    function _flushToken(address token, address to) private {
        (bool ok, bytes memory data) = token.staticcall(abi.encodeWithSelector(0x70a08231, address(this)));
        if (!ok || data.length < 32) return;
        uint256 amount = abi.decode(data, (uint256));
        if (amount == 0) return;
        (ok, data) = token.call(abi.encodeWithSelector(0xa9059cbb, to, amount));
        if (ok && (data.length == 0 ? token.code.length > 0 : (data.length >= 32 && abi.decode(data, (bool))))) {
            emit Flushed(token, amount);
        } else {
            emit NotFlushed(token, amount);
        }
    }
}
