// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title DevToken
/// @notice Minimal ERC-20 for Kassa's local development chain. Only the account that
///         deployed it (the minter) can create new tokens. Two flavours follow: TestToken
///         (the standard, returning bool) and NoReturnToken (USDT on Ethereum: transfer,
///         transferFrom and approve return nothing), so the local chain has both kinds.
abstract contract DevToken {
    string public name;
    string public symbol;
    uint8 public immutable decimals;
    address public immutable minter;
    uint256 public totalSupply;

    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error NotMinter(address caller);
    error ZeroAddress();
    error InsufficientBalance(address account, uint256 balance, uint256 needed);
    error InsufficientAllowance(address spender, uint256 allowance, uint256 needed);

    constructor(string memory name_, string memory symbol_, uint8 decimals_) {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
        minter = msg.sender;
    }

    function mint(address to, uint256 value) external {
        if (msg.sender != minter) revert NotMinter(msg.sender);
        if (to == address(0)) revert ZeroAddress();
        totalSupply += value;
        unchecked {
            // Cannot overflow: every balance is bounded by totalSupply.
            balanceOf[to] += value;
        }
        emit Transfer(address(0), to, value);
    }

    function _approve(address spender, uint256 value) internal {
        if (spender == address(0)) revert ZeroAddress();
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
    }

    function _spend(address from, uint256 value) internal {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < value) revert InsufficientAllowance(msg.sender, allowed, value);
            unchecked {
                allowance[from][msg.sender] = allowed - value;
            }
        }
    }

    function _transfer(address from, address to, uint256 value) internal {
        if (to == address(0)) revert ZeroAddress();
        uint256 balance = balanceOf[from];
        if (balance < value) revert InsufficientBalance(from, balance, value);
        unchecked {
            balanceOf[from] = balance - value;
            // Cannot overflow: the sum of all balances equals totalSupply.
            balanceOf[to] += value;
        }
        emit Transfer(from, to, value);
    }
}

/// @title TestToken
/// @notice The standard ERC-20 surface: transfer, transferFrom and approve return true.
contract TestToken is DevToken {
    constructor(string memory name_, string memory symbol_, uint8 decimals_) DevToken(name_, symbol_, decimals_) {}

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        _approve(spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        _spend(from, value);
        _transfer(from, to, value);
        return true;
    }
}

/// @title NoReturnToken
/// @notice Like USDT on Ethereum: transfer, transferFrom and approve return no value, which
///         code expecting a bool must tolerate.
contract NoReturnToken is DevToken {
    constructor(string memory name_, string memory symbol_, uint8 decimals_) DevToken(name_, symbol_, decimals_) {}

    function transfer(address to, uint256 value) external {
        _transfer(msg.sender, to, value);
    }

    function approve(address spender, uint256 value) external {
        _approve(spender, value);
    }

    function transferFrom(address from, address to, uint256 value) external {
        _spend(from, value);
        _transfer(from, to, value);
    }
}
