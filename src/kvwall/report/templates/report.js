// Sorting and filtering of the report's tables (table.data), offline: click a column's header to sort by it, type
// words into the box above a table to keep the rows that hold them all. A long table (data-preview) shows its first
// rows until it is filtered or 'show all' is pressed.
(function () {
  "use strict";
  var SCALE = { k: 1e3, M: 1e6, G: 1e9, T: 1e12 };

  function numberOf(text) {
    var match = text.replace(/,/g, "").trim().match(/^([-+\u2212]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?)\s*([kMGT])?(?![A-Za-z])/);
    if (!match) { return null; }
    return parseFloat(match[1].replace("\u2212", "-")) * (SCALE[match[4]] || 1);
  }

  function compare(a, b) {
    var x = numberOf(a), y = numberOf(b);
    if (x !== null && y !== null) { return x - y; }
    return a.localeCompare(b);
  }

  function setUp(table) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var rows = Array.prototype.slice.call(body.rows);
    var preview = parseInt(table.dataset.preview || "0", 10);
    var total = parseInt(table.dataset.rows || String(rows.length), 10);
    var state = { words: [], all: !preview };
    var tools = document.createElement("div");
    tools.className = "table-tools";
    var filter = document.createElement("input");
    filter.type = "search";
    filter.placeholder = "filter rows (words, all must match)";
    filter.setAttribute("aria-label", "filter the rows of this table");
    var count = document.createElement("span");
    tools.appendChild(filter);
    tools.appendChild(count);
    var button = null;
    if (preview) {
      button = document.createElement("button");
      button.type = "button";
      button.textContent = "show all rows kept here";
      tools.appendChild(button);
      button.addEventListener("click", function () { state.all = !state.all; refresh(); });
    }
    var box = table.parentNode.classList.contains("table-scroll") ? table.parentNode : table;
    box.parentNode.insertBefore(tools, box);

    function refresh() {
      var shown = 0, matching = 0;
      rows.forEach(function (row) {
        var text = row.textContent.toLowerCase();
        var match = state.words.every(function (word) { return text.indexOf(word) !== -1; });
        if (match) { matching += 1; }
        var show = match && (state.all || state.words.length > 0 || matching <= preview);
        row.hidden = !show;
        if (show) { shown += 1; }
      });
      count.textContent = shown + " of " + total + " rows shown" + (rows.length < total ? " (" + rows.length + " kept in this page)" : "");
      if (button) { button.textContent = state.all ? "show the first " + preview + " rows" : "show all rows kept here"; }
    }

    filter.addEventListener("input", function () {
      state.words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      refresh();
    });
    Array.prototype.forEach.call(table.tHead ? table.tHead.rows[0].cells : [], function (header, column) {
      header.addEventListener("click", function () {
        var descending = header.getAttribute("aria-sort") === "ascending";
        Array.prototype.forEach.call(header.parentNode.cells, function (cell) { cell.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", descending ? "descending" : "ascending");
        rows.sort(function (a, b) {
          var order = compare(a.cells[column].textContent, b.cells[column].textContent);
          return descending ? -order : order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
        refresh();
      });
    });
    refresh();
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.data"), setUp);
  });
}());
