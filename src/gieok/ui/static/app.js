// Keyboard: "/" focuses search, j/k move between memories, Enter opens the focused one. Nothing else: pages
// are server-rendered and htmx (boosted links and forms) makes them feel quick.
(function () {
  function rows() { return Array.from(document.querySelectorAll("[data-row] a.open")); }
  // Filter menus apply as soon as one changes (the Apply button stays for keyboards and no-script use).
  document.addEventListener("change", function (e) {
    var f = e.target && e.target.closest && e.target.closest("form[data-autosubmit]");
    if (f && e.target.tagName === "SELECT") f.requestSubmit();
  });
  document.addEventListener("keydown", function (e) {
    var t = e.target, typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/") {
      var q = document.getElementById("quick-q");
      if (q) { e.preventDefault(); q.focus(); q.select(); }
    } else if (e.key === "j" || e.key === "k") {
      var list = rows(); if (!list.length) return;
      var i = list.indexOf(document.activeElement);
      i = e.key === "j" ? Math.min(list.length - 1, i + 1) : Math.max(0, i - 1);
      list[i].focus(); list[i].scrollIntoView({ block: "nearest" }); e.preventDefault();
    }
  });
})();
