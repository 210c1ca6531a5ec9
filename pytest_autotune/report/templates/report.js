/* Sorting and filtering for the report; it reads and writes text only (textContent,
   dataset), never markup, so nothing from a record can become a script. */
(function () {
  "use strict";

  function sortValue(row, column) {
    var cell = row.cells[column];
    if (!cell) { return ""; }
    return cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim().toLowerCase();
  }

  function compare(a, b) {
    var x = Number(a), y = Number(b);
    if (a !== "" && b !== "" && !isNaN(x) && !isNaN(y)) {
      return x === y ? 0 : (x < y ? -1 : 1);
    }
    return a < b ? -1 : (a > b ? 1 : 0);
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var headers = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(headers, function (header, column) {
      header.tabIndex = 0;
      // The template's title says what the column means; replacing it with "sort by"
      // alone lost that, so the hint to click follows it.
      header.title = header.title ? header.title + "; click to sort"
        : header.textContent.trim() + ": click to sort";
      function sort() {
        var ascending = header.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var order = compare(sortValue(a, column), sortValue(b, column));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      }
      header.addEventListener("click", sort);
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  });

  var filter = document.getElementById("filter");
  var failedOnly = document.getElementById("failed-only");
  var shown = document.getElementById("shown");
  if (!filter || !failedOnly || !shown) { return; }

  function apply() {
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    var onlyFailed = failedOnly.checked;
    var visible = 0, total = 0;
    Array.prototype.forEach.call(document.querySelectorAll("[data-search]"), function (element) {
      var text = element.dataset.search;
      var show = (!onlyFailed || element.dataset.failed === "true") &&
        words.every(function (word) { return text.indexOf(word) >= 0; });
      element.hidden = !show;
      if (element.classList.contains("decision")) {
        total += 1;
        if (show) { visible += 1; }
      }
    });
    shown.textContent = visible + " of " + total + " groups shown";
  }

  filter.addEventListener("input", apply);
  failedOnly.addEventListener("change", apply);
  apply();
  filter.closest(".controls").hidden = false;
})();
