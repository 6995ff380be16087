/* Hosted checkout: live status and countdown (copy buttons: copy.js). No inline script, no eval.
   The QR code, the amount and its copy button are rendered by the server for what is still due:
   when that changes while the payment is open (a partial payment), the page reloads to show the new one;
   so it does when funds arrive on the wrong network (the server renders that notice). */
(function () {
  "use strict";
  var root = document.getElementById("checkout");
  if (!root) { return; }
  var statusUrl = root.getAttribute("data-status-url");
  var token = root.getAttribute("data-token");
  var expiresAt = Date.parse(root.getAttribute("data-expires-at"));
  var renderedState = root.getAttribute("data-state");
  var renderedRemaining = root.getAttribute("data-remaining");
  var renderedWrongNetwork = Number(root.getAttribute("data-wrong-network") || 0);
  var OPEN = { pending: true, partially_paid: true };
  var cancelForm = document.getElementById("cancel-form");
  var FINAL = { completed: true, expired: true, canceled: true };
  var text = document.getElementById("status-text");
  var detail = document.getElementById("status-detail");
  var countdown = document.getElementById("countdown");
  var redirecting = false;
  var pollTimer = null;

  function describe(s) {
    switch (s.status) {
      case "COMPLETED":
        return ["Payment complete. Thank you!", s.redirect_url ? "Taking you back to the shop…" : ""];
      case "PARTIALLY_PAID":
        return ["Partially paid", "Received " + s.amount_received + " " + token + ". Send the remaining " +
                s.amount_remaining + " " + token + " to the same address."];
      case "EXPIRED":
        return ["This payment has expired", "Do not send funds to this address any more."];
      case "CANCELED":
        return ["This payment was canceled", "Do not send funds to this address."];
      default:
        if (s.seen) {
          return ["Payment seen, waiting for confirmations",
                  s.confirmations + "/" + s.required_confirmations + " confirmations"];
        }
        return ["Waiting for payment…", "This page updates by itself once your transfer is seen."];
    }
  }

  function safeRedirect(url) {
    try {
      var u = new URL(url, window.location.href);
      return (u.protocol === "https:" || u.protocol === "http:") ? u.href : null;
    } catch (e) { return null; }
  }

  function render(s) {
    var state = s.status.toLowerCase();
    if ((OPEN[renderedState] && OPEN[state] && s.amount_remaining !== renderedRemaining) ||
        (s.wrong_network && s.wrong_network.length !== renderedWrongNetwork)) {
      window.location.reload();  /* a new amount due (a new QR code), or funds on the wrong network to explain */
      return;
    }
    root.setAttribute("data-state", state);
    var words = describe(s);
    text.textContent = words[0];
    detail.textContent = words[1];
    if (cancelForm) { cancelForm.hidden = !s.cancelable; }
    if (s.expires_at) { expiresAt = Date.parse(s.expires_at); }
    if (state === "completed" && s.redirect_url && !redirecting) {
      var target = safeRedirect(s.redirect_url);
      if (target) {
        redirecting = true;
        window.setTimeout(function () { window.location.assign(target); }, 2000);
      }
    }
    if (FINAL[state] && pollTimer) { window.clearInterval(pollTimer); pollTimer = null; }
  }

  function poll() {
    fetch(statusUrl, { headers: { "Accept": "application/json" }, cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) { if (s) { render(s); } })
      .catch(function () { /* offline for a moment: the next poll retries */ });
  }

  function tick() {
    var left = Math.max(0, Math.floor((expiresAt - Date.now()) / 1000));
    var m = Math.floor(left / 60), sec = left % 60;
    countdown.textContent = (m < 10 ? "0" : "") + m + ":" + (sec < 10 ? "0" : "") + sec;
  }

  tick();
  window.setInterval(tick, 1000);
  poll();
  pollTimer = window.setInterval(poll, 2500);
}());
