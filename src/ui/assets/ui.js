// schemaops registry pages: the one script. Filters the subject list as
// you type; "/" jumps to the search field; a "Copy" button copies the text
// of the element it names. Nothing is fetched.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var search = document.getElementById("subject-search");
  var rows = document.querySelectorAll("#subjects tbody tr");
  if (search) {
    search.addEventListener("input", function () {
      var wanted = search.value.toLowerCase();
      var shown = 0;
      rows.forEach(function (row) {
        var match = (row.getAttribute("data-subject") || "").toLowerCase().indexOf(wanted) !== -1;
        row.hidden = !match;
        if (match) { shown += 1; }
      });
      var count = document.getElementById("subject-count");
      if (count) { count.textContent = String(shown); }
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "/" && document.activeElement !== search && !(document.activeElement instanceof HTMLTextAreaElement)) {
        event.preventDefault();
        search.focus();
      }
    });
  }
  document.querySelectorAll("button[data-copies]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copies"));
      if (!source || !navigator.clipboard) { return; }
      navigator.clipboard.writeText(source.textContent).then(function () {
        button.textContent = "Copied";
      });
    });
  });
});
