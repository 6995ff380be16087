/* Receipt: the print button (shown only where it works, with JavaScript). */
(function () {
  "use strict";
  var button = document.getElementById("print-receipt");
  if (!button) { return; }
  button.hidden = false;
  button.addEventListener("click", function () { window.print(); });
}());
