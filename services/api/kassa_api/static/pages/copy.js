/* Copy buttons: <button data-copy="ID"> copies the text of the element with that id. A page
   may render them hidden (they do nothing without JavaScript): they are shown here. */
(function () {
  "use strict";

  function copy(button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var value = source ? source.textContent.trim() : "";
    function done() {
      button.textContent = "Copied";
      button.classList.add("copied");
      window.setTimeout(function () { button.textContent = "Copy"; button.classList.remove("copied"); }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(value).then(done, function () { fallback(source); done(); });
    } else { fallback(source); done(); }
  }

  function fallback(source) {
    var range = document.createRange();
    range.selectNodeContents(source);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    try { document.execCommand("copy"); } catch (e) { /* the text stays selected for a manual copy */ }
  }

  Array.prototype.forEach.call(document.querySelectorAll("button[data-copy]"), function (b) {
    b.addEventListener("click", function () { copy(b); });
    b.hidden = false;
  });
}());
