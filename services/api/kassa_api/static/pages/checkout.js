/* Hosted checkout: live status and countdown (copy buttons: copy.js). No inline script, no eval.
   The server renders the page for the payment's current state (it is right without JavaScript).
   This script polls the status and, when what the page shows is out of date (another state, a
   transfer seen, a new amount due after a partial payment, funds on the wrong network), reloads
   it; only the confirmation count is updated in place. A tab that watched the payment while it
   was open takes the customer back to the shop (redirect_url) once it completes. */
(function () {
  "use strict";
  var root = document.getElementById("checkout");
  if (!root) { return; }
  var statusUrl = root.getAttribute("data-status-url");
  var expiresAt = Date.parse(root.getAttribute("data-expires-at"));
  var renderedState = root.getAttribute("data-state");
  var renderedSeen = root.getAttribute("data-seen") === "true";
  var renderedRemaining = root.getAttribute("data-remaining");
  var renderedWrongNetwork = Number(root.getAttribute("data-wrong-network") || 0);
  var backUrl = root.getAttribute("data-back-url");
  var watchKey = "kassa:watching:" + root.getAttribute("data-short-id");
  var OPEN = { pending: true, partially_paid: true };
  var cancelBox = document.getElementById("cancel-payment");
  var detail = document.getElementById("status-detail");
  var confirmations = document.getElementById("confirmations");
  var countdown = document.getElementById("countdown");
  var reloading = false;

  function remember(watching) {
    try {
      if (watching) { window.sessionStorage.setItem(watchKey, "1"); } else { window.sessionStorage.removeItem(watchKey); }
    } catch (e) { /* storage disabled: no automatic return to the shop */ }
  }

  function watched() {
    try { return window.sessionStorage.getItem(watchKey) === "1"; } catch (e) { return false; }
  }

  function safeRedirect(url) {
    try {
      var u = new URL(url, window.location.href);
      return (u.protocol === "https:" || u.protocol === "http:") ? u.href : null;
    } catch (e) { return null; }
  }

  function render(s) {
    var state = s.status.toLowerCase();
    if (state !== renderedState || Boolean(s.seen) !== renderedSeen ||
        (OPEN[state] && s.amount_remaining !== renderedRemaining) ||
        (s.wrong_network && s.wrong_network.length !== renderedWrongNetwork)) {
      if (!reloading) { reloading = true; window.location.reload(); }
      return;
    }
    if (confirmations) { confirmations.textContent = s.confirmations + "/" + s.required_confirmations; }
    if (cancelBox) { cancelBox.hidden = !s.cancelable; }
    if (s.expires_at) { expiresAt = Date.parse(s.expires_at); }
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

  if (OPEN[renderedState]) {
    remember(true);
    /* the server's words are right without JavaScript ("reload this page"); with it, the page updates itself */
    if (detail && detail.getAttribute("data-live-text")) { detail.textContent = detail.getAttribute("data-live-text"); }
    if (countdown) { tick(); window.setInterval(tick, 1000); }
    poll();
    window.setInterval(poll, 2500);
    return;
  }
  /* a final state: nothing changes any more, except that a completed payment this tab saw open
     goes back to the shop */
  if (renderedState === "completed" && backUrl && watched()) {
    var target = safeRedirect(backUrl);
    var note = document.getElementById("redirect-note");
    if (target) {
      if (note) { note.textContent = "Taking you back to the shop…"; note.hidden = false; }
      window.setTimeout(function () { window.location.assign(target); }, 2500);
    }
  }
  remember(false);
}());
