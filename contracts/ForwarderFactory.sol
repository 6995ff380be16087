// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "./Forwarder.sol";

/// @title ForwarderFactory
/// @notice Counterfactual deposit addresses for Kassa payments. A deposit address is the
///         CREATE2 address of an EIP-1167 clone of `implementation`, with the salt
///         `keccak256(abi.encode(settlement, paymentSalt))`: the settlement address is part
///         of the address itself. Customers pay the address before anything is deployed;
///         `flush` / `flushMany` deploy the clone when needed (initialised in the same call)
///         and move its funds to the settlement address.
/// @dev Deployed through the deterministic deployer 0x4e59b44847b379578588920cA78FbF26c0B4956C,
///      so it, its implementation and every deposit address are the same on every EVM chain.
///      Whoever calls with another settlement address reaches another deposit address: a
///      front-runner can neither redirect nor block a deposit's funds.
contract ForwarderFactory {
    struct Deposit {
        address settlement;
        bytes32 salt;
        address[] tokens;
    }

    /// @notice The code every deposit clone delegates to.
    address public immutable implementation;
    bytes32 private immutable cloneCodeHash;

    /// @notice A deposit's clone was created and bound to `settlement`.
    event Deployed(address indexed forwarder, address indexed settlement, bytes32 salt);

    error DeployFailed();

    constructor() {
        address impl = address(new Forwarder());
        implementation = impl;
        cloneCodeHash = keccak256(_cloneCode(impl));
    }

    /// @notice The deposit address of `salt` for `settlement`, deployed or not.
    function depositAddress(address settlement, bytes32 salt) public view returns (address) {
        bytes32 digest = keccak256(abi.encodePacked(bytes1(0xff), address(this), _salt(settlement, salt), cloneCodeHash));
        return address(uint160(uint256(digest)));
    }

    /// @notice Create the deposit's clone if it has no code yet; returns its address.
    function deploy(address settlement, bytes32 salt) public returns (address forwarder) {
        forwarder = depositAddress(settlement, salt);
        if (forwarder.code.length > 0) return forwarder;
        bytes memory code = _cloneCode(implementation);
        bytes32 create2Salt = _salt(settlement, salt);
        address created;
        assembly {
            created := create2(0, add(code, 0x20), mload(code), create2Salt)
        }
        if (created != forwarder) revert DeployFailed();
        Forwarder(payable(created)).initialize(settlement);
        emit Deployed(created, settlement, salt);
    }

    /// @notice Deploy the deposit if needed and move `tokens` and the native coin to `settlement`.
    function flush(address settlement, bytes32 salt, address[] calldata tokens) external {
        Forwarder(payable(deploy(settlement, salt))).flush(tokens);
    }

    /// @notice `flush` for many deposits in one transaction (the sweeper's batches).
    function flushMany(Deposit[] calldata deposits) external {
        for (uint256 i = 0; i < deposits.length; ++i) {
            Deposit calldata d = deposits[i];
            Forwarder(payable(deploy(d.settlement, d.salt))).flush(d.tokens);
        }
    }

    function _salt(address settlement, bytes32 salt) private pure returns (bytes32) {
        return keccak256(abi.encode(settlement, salt));
    }

    /// @dev EIP-1167 minimal proxy creation code delegating to `implementation`.
    function _cloneCode(address impl) private pure returns (bytes memory) {
        return abi.encodePacked(
            hex"3d602d80600a3d3981f3363d3d373d3d3d363d73", impl, hex"5af43d82803e903d91602b57fd5bf3"
        );
    }
}
