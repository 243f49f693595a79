// The side panel: open a document at the quotes a link names, highlight them, and come back.
// Everything the page shows is in the HTML already; this only shows and hides it.
(function () {
  "use strict";
  var root = document.documentElement;
  root.classList.add("js");
  var panel = document.getElementById("panel");
  var pathEl = document.getElementById("panel-path");
  var kindsEl = document.getElementById("panel-kinds");
  var countEl = document.getElementById("panel-count");
  var opener = null;
  var marks = [];
  var current = -1;

  function show(i) {
    if (!marks.length) return;
    if (current >= 0) marks[current].classList.remove("cur");
    current = (i + marks.length) % marks.length;
    marks[current].classList.add("cur");
    marks[current].scrollIntoView({ block: "center" });
    countEl.textContent = (current + 1) + " / " + marks.length;
  }

  function open(link) {
    var doc = document.getElementById(link.getAttribute("data-doc"));
    if (!doc) return;
    panel.querySelectorAll(".doc.shown").forEach(function (d) { d.classList.remove("shown"); });
    panel.querySelectorAll("mark.on").forEach(function (m) { m.classList.remove("on", "cur"); });
    document.querySelectorAll("a.trace.active").forEach(function (a) { a.classList.remove("active"); });
    doc.classList.add("shown");
    (link.getAttribute("data-spans") || "").split(" ").forEach(function (id) {
      if (!id) return;
      doc.querySelectorAll('mark[data-s~="' + id + '"]').forEach(function (m) { m.classList.add("on"); });
    });
    marks = Array.prototype.slice.call(doc.querySelectorAll("mark.on"));
    current = -1;
    pathEl.textContent = link.getAttribute("data-path") || doc.getAttribute("data-path");
    kindsEl.textContent = link.getAttribute("data-kinds") || "";
    kindsEl.hidden = !kindsEl.textContent;
    countEl.textContent = marks.length ? "" : "whole document";
    document.body.classList.add("panel-open");
    link.classList.add("active");
    opener = link;
    panel.focus({ preventScroll: true });
    if (marks.length) show(0); else panel.scrollTop = 0;
  }

  function close() {
    document.body.classList.remove("panel-open");
    if (opener) opener.focus();
  }

  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a.trace");
    if (a && a.getAttribute("data-doc")) { e.preventDefault(); open(a); }
  });
  document.getElementById("panel-close").addEventListener("click", close);
  document.addEventListener("keydown", function (e) {
    if (!document.body.classList.contains("panel-open")) return;
    if (e.key === "Escape") { e.preventDefault(); close(); }
    else if ((e.key === "n" || e.key === "p") && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault(); show(current + (e.key === "n" ? 1 : -1));
    }
  });
  // A link to a document (#doc-3) opens it in the panel, so a page address can point at a source.
  if (/^#doc-\d+$/.test(location.hash)) {
    var first = document.querySelector('a.trace[data-doc="' + location.hash.slice(1) + '"]');
    if (first) open(first);
  }
})();
