/* "Pay with browser wallet" (the checkout's payment, the dashboard's refund payout): asks the
   injected EIP-1193 provider (window.ethereum) for an account, switches it to the chain the
   button names (wallet_switchEthereumChain), and sends exactly what is due: native value, or
   an ERC-20 transfer(address,uint256) call of the token's base units. The button carries it
   all: data-to, data-units, data-token (the contract; empty for the native coin),
   data-chain-id. A button in a hidden box is shown only when a provider is present (the QR
   code and the wallet link stay for everyone else). The hash it gets back goes into a
   #transaction_hash field when the page has one; either way the chain watcher sees the
   transfer and completes what it pays. */
(function () {
  "use strict";

  var button = document.getElementById("wallet-pay");
  var status = document.getElementById("wallet-status");
  if (!button || !status) { return; }

  function provider() {
    return window.ethereum && typeof window.ethereum.request === "function" ? window.ethereum : null;
  }

  function say(text, bad) {
    status.textContent = text;
    status.className = bad ? "form-error" : "muted";
  }

  function word(hex) { return hex.replace(/^0x/, "").toLowerCase().padStart(64, "0"); }

  function hexUnits(decimal) { return "0x" + BigInt(decimal).toString(16); }

  function request(method, params) {
    return provider().request({ method: method, params: params || [] });
  }

  function pay() {
    if (!provider()) {
      say("No browser wallet found: install one (MetaMask, Rabby, …) or pay from any wallet with the address and amount above.", true);
      return;
    }
    var to = button.getAttribute("data-to");
    var units = button.getAttribute("data-units");
    var token = button.getAttribute("data-token");
    var chainId = button.getAttribute("data-chain-id");
    var from;
    button.disabled = true;
    say("Waiting for the wallet…");
    request("eth_requestAccounts").then(function (accounts) {
      if (!accounts || !accounts.length) { throw new Error("the wallet gave no account"); }
      from = accounts[0];
      return request("eth_chainId");
    }).then(function (current) {
      if (chainId && current && BigInt(current) !== BigInt(chainId)) {
        return request("wallet_switchEthereumChain", [{ chainId: "0x" + BigInt(chainId).toString(16) }]);
      }
      return null;
    }).then(function () {
      var tx = token
        ? { from: from, to: token, value: "0x0", data: "0xa9059cbb" + word(to) + word(hexUnits(units)) }
        : { from: from, to: to, value: hexUnits(units) };
      return request("eth_sendTransaction", [tx]);
    }).then(function (hash) {
      say("Sent: " + hash + ". It completes once the transfer has its confirmations.");
      var field = document.getElementById("transaction_hash");
      if (field) { field.value = hash; }
      button.disabled = false;
    }).catch(function (err) {
      say("The wallet did not send it: " + ((err && err.message) || err), true);
      button.disabled = false;
    });
  }

  function reveal() {
    if (provider() && button.parentElement) { button.parentElement.hidden = false; }
  }

  button.addEventListener("click", pay);
  reveal();
  window.addEventListener("ethereum#initialized", reveal, { once: true });  /* a provider injected late */
}());
