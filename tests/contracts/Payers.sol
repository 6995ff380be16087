// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

// Contracts that pay the way real payers' contracts do, for the chain watcher's tests of
// native-coin crediting (tests/integration/chains/test_evm_value_that_arrived.py). None of them is
// part of Kassa. Compiled by the pinned npm solc (tests/support/contracts.py).

interface IERC20 {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

interface IForwarder {
    function flush(address[] calldata tokens) external;
}

/// @notice Pays from inside contract calls: for real, from inside call frames that revert,
///         and in batches (one transaction, many recipients: an exchange's payout, a Safe
///         MultiSend, an ERC-4337 bundle).
contract Payer {
    error Undone();

    receive() external payable {}

    /// @notice Send `real` wei to `to` for real, then `fake` wei from inside a call frame that
    ///         reverts. The frame that reverts is `failDepth` (>= 1) calls below the
    ///         transaction's own; the value moves `sendDepth` successful calls below it. A
    ///         parity trace marks only the frame that reverted with an `error`: the calls
    ///         below it (the one moving `fake` too) look successful.
    function payThenFake(address payable to, uint256 real, uint256 fake, uint256 failDepth, uint256 sendDepth)
        external
        payable
    {
        _send(to, real);
        _fakeAt(to, fake, failDepth, sendDepth);
    }

    /// @dev One more call down on the way to the frame that reverts.
    function down(address payable to, uint256 fake, uint256 failDepth, uint256 sendDepth) external {
        require(msg.sender == address(this));
        _fakeAt(to, fake, failDepth, sendDepth);
    }

    /// @dev The frame that reverts: everything below it succeeded, then it undoes it all.
    function fail(address payable to, uint256 fake, uint256 sendDepth) external {
        require(msg.sender == address(this));
        if (sendDepth == 0) {
            _send(to, fake);
        } else {
            this.relay(to, fake, sendDepth - 1);
        }
        revert Undone();
    }

    /// @dev `depth` more calls, then the value moves.
    function relay(address payable to, uint256 value, uint256 depth) external {
        require(msg.sender == address(this));
        if (depth > 0) {
            this.relay(to, value, depth - 1);
        } else {
            _send(to, value);
        }
    }

    /// @notice Send `through` wei to a forwarder deposit, flush it on (its balance goes to its
    ///         settlement address), then send `kept` wei that stays: the deposit's balance rose
    ///         by `kept` only, while the calls that reached it carried `through + kept`.
    function payFlushPay(address payable deposit, uint256 through, uint256 kept) external payable {
        _send(deposit, through);
        IForwarder(deposit).flush(new address[](0));
        _send(deposit, kept);
    }

    /// @notice One transaction paying `amounts[i]` wei to `to[i]`, each by an internal call.
    function payMany(address payable[] calldata to, uint256[] calldata amounts) external payable {
        require(to.length == amounts.length);
        for (uint256 i = 0; i < to.length; ++i) {
            _send(to[i], amounts[i]);
        }
    }

    /// @notice One transaction moving `amounts[i]` of `token` from the caller (who approved
    ///         this contract) to `to[i]`: one `Transfer` log per recipient.
    function payTokens(IERC20 token, address[] calldata to, uint256[] calldata amounts) external {
        require(to.length == amounts.length);
        for (uint256 i = 0; i < to.length; ++i) {
            require(token.transferFrom(msg.sender, to[i], amounts[i]));
        }
    }

    function _fakeAt(address payable to, uint256 fake, uint256 failDepth, uint256 sendDepth) private {
        if (failDepth > 1) {
            this.down(to, fake, failDepth - 1, sendDepth);
        } else {
            try this.fail(to, fake, sendDepth) {} catch {}
        }
    }

    function _send(address payable to, uint256 value) private {
        (bool ok, ) = to.call{value: value}("");
        require(ok);
    }
}
