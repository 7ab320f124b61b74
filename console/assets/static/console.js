// The console's only script: it keeps a page up to date while runs
// change. The page names a stream of server-sent events (data-watch); on
// each change it fetches itself again and swaps in the parts that are
// marked data-live, except one that holds the keyboard focus (a note
// being written), which waits for the next change. Details that were
// open stay open. Without this script every page still works: reload it.
(function () {
  "use strict";
  var body = document.body;
  var url = body && body.getAttribute("data-watch");
  var live = document.getElementById("live");

  // A graph node links to its step's details: open them.
  function openTarget() {
    if (!location.hash) return;
    var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    while (el) {
      if (el.tagName === "DETAILS") el.open = true;
      el = el.parentElement;
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  if (!url || !window.EventSource || !window.fetch || !window.DOMParser) return;

  function say(text, state) {
    if (!live) return;
    live.textContent = text;
    live.setAttribute("data-state", state);
  }

  // busy: a fetch is under way; queued: a change came meanwhile; stale:
  // a part was left as it was because it held the focus.
  var busy = false, queued = false, stale = false;
  function refresh() {
    if (busy) { queued = true; return; }
    busy = true;
    stale = false;
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var focus = document.activeElement;
        document.querySelectorAll("[data-live]").forEach(function (el) {
          var next = el.id && doc.getElementById(el.id);
          if (!next) return;
          if (focus && focus !== document.body && el.contains(focus)) {
            stale = true;
            return;
          }
          var open = {};
          el.querySelectorAll("details[open][id]").forEach(function (d) { open[d.id] = true; });
          next.querySelectorAll("details[id]").forEach(function (d) { if (open[d.id]) d.open = true; });
          if (el.outerHTML !== next.outerHTML) el.replaceWith(document.importNode(next, true));
        });
        document.title = doc.title;
        body.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { say("offline", "off"); })
      .then(function () {
        busy = false;
        if (queued) { queued = false; refresh(); }
      });
  }
  // A part left as it was is brought up to date once the focus leaves it.
  document.addEventListener("focusout", function () {
    if (stale) setTimeout(refresh, 0);
  });

  var es = new EventSource(url);
  // The page was rendered before the stream began: what was recorded in
  // between comes with no change event, so fetch the page once the
  // stream is ready (and again after each reconnection).
  es.addEventListener("ready", function () { say("live", "on"); refresh(); });
  es.addEventListener("change", function () { say("live", "on"); refresh(); });
  es.onerror = function () { say("reconnecting…", "off"); };
})();
