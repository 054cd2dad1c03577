/* piweb's HTML export (sessions_app/render/export.py): the tree with its branches, filters, search and
   the conversation, offline. Cards hold HTML the server rendered and sanitised (the app's markdown
   rules); every other text goes through textContent. Deep links: ?leafId=&targetId= as pi's export,
   plus &filter= and &q=. An export with reviews also holds the review comments and verdicts
   (script.piweb-reviews): drawn under their entry's card, counted on its tree row; #comment-<id>
   opens a comment. */
(function () {
  "use strict";
  var doc = document;
  if (window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches) doc.documentElement.setAttribute("data-theme", "dark");
  var meta = JSON.parse(doc.getElementById("piweb-meta").textContent);
  var E = [];
  Array.prototype.forEach.call(doc.querySelectorAll("script.piweb-entries"), function (s) {
    var part = JSON.parse(s.textContent);
    for (var i = 0; i < part.length; i++) E.push(part[i]);
  });
  var by = Object.create(null), kids = Object.create(null), roots = [], labels = Object.create(null);
  E.forEach(function (e) { by[e.i] = e; });
  E.forEach(function (e) {
    if (e.p == null || e.p === e.i || !by[e.p]) roots.push(e);
    else (kids[e.p] = kids[e.p] || []).push(e);
    if (e.t === "label" && e.g) { if (e.l) labels[e.g] = e.l; else delete labels[e.g]; }
  });
  Object.keys(kids).forEach(function (k) { kids[k].sort(function (a, b) { return a.ts - b.ts; }); });
  // Review comments and verdicts: threads (root, then replies) and verdicts by entry id.
  var R = { threads: Object.create(null), verdicts: Object.create(null), comments: Object.create(null),
    counts: Object.create(null), latest: Object.create(null) };
  Array.prototype.forEach.call(doc.querySelectorAll("script.piweb-reviews"), function (s) {
    JSON.parse(s.textContent).forEach(function (x) {
      if (x.k === "c") {
        R.comments[x.id] = x;
        x.replies = [];
        if (x.p == null) (R.threads[x.e] = R.threads[x.e] || []).push(x);
        else if (R.comments[x.p]) R.comments[x.p].replies.push(x);
        if (x.h != null) R.counts[x.e] = (R.counts[x.e] || 0) + 1;
      } else if (x.k === "v") {
        (R.verdicts[x.e] = R.verdicts[x.e] || []).push(x);
        (R.latest[x.e] = R.latest[x.e] || Object.create(null))[x.a] = x.v;  // each reviewer's latest
      }
    });
  });
  var VERDICTS = { approved: ["✓", "approved"], changes_requested: ["✗", "changes requested"], flagged: ["⚑", "flagged"] };

  var FILTERS = ["default", "no-tools", "user-only", "labeled-only", "all"];
  var HIDDEN = { label: 1, custom: 1, model_change: 1, thinking_level_change: 1, session_info: 1 };
  var ICONS = { user: "●", assistant: "◆", toolResult: "⚙", bashExecution: "$", compaction: "⇊", branch_summary: "↯",
    custom_message: "◈", model_change: "◇", thinking_level_change: "✱", label: "#", session_info: "✎" };
  var TEXTLESS = "assistant · ";
  var WINDOW = 150;  // cards drawn each side of the target; more on demand

  var params = new URLSearchParams(location.search);
  function known(id) { return id && by[id] ? id : null; }
  var leafId = known(params.get("leafId")) || known(meta.leafId) || (E.length ? E[E.length - 1].i : null);
  var targetId = known(params.get("targetId")) || leafId;
  var mode = FILTERS.indexOf(params.get("filter")) >= 0 ? params.get("filter") : "default";
  var query = params.get("q") || "";
  var matches = [], matchAt = -1, rowOf = Object.create(null), onPath = Object.create(null);
  var span = { from: 0, to: 0 };

  function el(tag, cls, text) {
    var n = doc.createElement(tag);
    if (cls) n.className = cls;
    if (text != null) n.textContent = text;
    return n;
  }
  function words() { return query.toLowerCase().split(/\s+/).filter(Boolean); }
  function rowText(e) {
    var x = e.x || "";
    if (x.indexOf("user: ") === 0) return x.slice(6);
    if (x.indexOf("assistant: ") === 0) return x.slice(11);
    if (x.indexOf(TEXTLESS) === 0) return x.slice(TEXTLESS.length);
    return x;
  }
  function visible(e) {
    if (e.i === leafId || mode === "all") return true;
    if ((e.x || "").indexOf(TEXTLESS) === 0 || HIDDEN[e.t]) return false;
    if (mode === "user-only") return e.r === "user";
    if (mode === "labeled-only") return !!labels[e.i];
    if (mode === "no-tools") return e.r !== "toolResult";
    return true;
  }
  function matching(e, ws) {
    var hay = ((labels[e.i] || "") + " " + (e.x || "")).toLowerCase();
    return ws.every(function (w) { return hay.indexOf(w) >= 0; });
  }
  function pathTo(id) {
    var out = [], seen = Object.create(null), n = by[id];
    while (n && !seen[n.i]) { seen[n.i] = 1; out.push(n); n = n.p != null && n.p !== n.i ? by[n.p] : null; }
    return out.reverse();
  }
  function newestLeaf(id) {
    var n = by[id];
    while (kids[n.i] && kids[n.i].length) n = kids[n.i][kids[n.i].length - 1];
    return n.i;
  }
  function siblings(e) { return e.p != null && by[e.p] && e.p !== e.i ? kids[e.p] : roots; }

  // Text with every searched word marked.
  function marked(text, ws) {
    var frag = doc.createDocumentFragment(), lower = text.toLowerCase(), spans = [];
    ws.forEach(function (w) {
      for (var at = lower.indexOf(w); at >= 0 && w; at = lower.indexOf(w, at + w.length)) spans.push([at, at + w.length]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var pos = 0;
    spans.forEach(function (s) {
      if (s[0] < pos) { if (s[1] > pos) { frag.lastChild.textContent += text.slice(pos, s[1]); pos = s[1]; } return; }
      if (s[0] > pos) frag.appendChild(doc.createTextNode(text.slice(pos, s[0])));
      frag.appendChild(el("mark", null, text.slice(s[0], s[1])));
      pos = s[1];
    });
    if (pos < text.length) frag.appendChild(doc.createTextNode(text.slice(pos)));
    return frag;
  }

  // --- the tree: branches drawn with guides (├─ └─ │), as pi's /tree ------------------------------
  function flatten() {
    var out = [], stack = [], multi = roots.length > 1;
    for (var r = roots.length - 1; r >= 0; r--) stack.push([roots[r], "", multi, r === roots.length - 1]);
    while (stack.length) {
      var it = stack.pop(), e = it[0], prefix = it[1], conn = it[2], last = it[3];
      out.push([e, prefix + (conn ? (last ? "└─ " : "├─ ") : "")]);
      var ks = kids[e.i] || [], inner = prefix + (conn ? (last ? "   " : "│  ") : "");
      for (var k = ks.length - 1; k >= 0; k--) stack.push([ks[k], inner, ks.length > 1, k === ks.length - 1]);
    }
    return out;
  }
  function row(e, guide, ws) {
    var kind = e.t === "message" ? (e.r || "custom") : e.t;
    var r = el("div", "row k-" + (e.k || kind));
    r.dataset.id = e.i;
    r.setAttribute("role", "treeitem");
    if (guide) r.appendChild(el("span", "guide", guide.length > 48 ? "…" + guide.slice(-47) : guide));
    r.appendChild(el("span", "ic", ICONS[kind] || "◌"));
    if (labels[e.i]) r.appendChild(el("span", "badge", labels[e.i]));
    var t = el("span", "txt");
    t.appendChild(marked(rowText(e), ws));
    r.appendChild(t);
    if (R.counts[e.i]) r.appendChild(el("span", "cm", "💬" + R.counts[e.i]));
    if (R.latest[e.i]) Object.keys(R.latest[e.i]).sort().forEach(function (who) {
      var v = R.latest[e.i][who], vm = el("span", "vm v-" + v, (VERDICTS[v] || ["?"])[0]);
      vm.title = who + ": " + ((VERDICTS[v] || [0, v])[1]) + ", reviewed up to here";
      r.appendChild(vm);
    });
    if (onPath[e.i]) r.classList.add("path");
    if (e.i === targetId) r.classList.add("sel");
    rowOf[e.i] = r;
    return r;
  }
  var flat = null;
  function drawTree() {
    var box = doc.getElementById("tree"), frag = doc.createDocumentFragment(), ws = words();
    box.textContent = "";
    rowOf = Object.create(null);
    matches = [];
    if (ws.length) {
      E.forEach(function (e) { if (visible(e) && matching(e, ws)) { matches.push(e.i); frag.appendChild(row(e, "", ws)); } });
      if (!matches.length) frag.appendChild(el("p", "muted", "No entry matches every word."));
      matchAt = matches.indexOf(targetId);
    } else {
      flat = flat || flatten();
      var shown = 0;
      flat.forEach(function (item) { if (visible(item[0])) { shown++; frag.appendChild(row(item[0], item[1], ws)); } });
      doc.getElementById("status").textContent = shown + " / " + E.length + " entries";
    }
    box.appendChild(frag);
    status();
    var sel = rowOf[targetId];
    if (sel) sel.scrollIntoView({ block: "center" });
  }
  function status() {
    var ws = words();
    doc.getElementById("prev").disabled = doc.getElementById("next").disabled = !matches.length;
    if (!ws.length) return;
    doc.getElementById("status").textContent = matches.length
      ? (matchAt >= 0 ? (matchAt + 1) + " of " : "") + matches.length + " match" + (matches.length === 1 ? "" : "es")
      : "0 matches";
  }
  function markPath() {
    Object.keys(onPath).forEach(function (id) { if (rowOf[id]) rowOf[id].classList.remove("path"); });
    onPath = Object.create(null);
    pathTo(leafId).forEach(function (n) { onPath[n.i] = 1; if (rowOf[n.i]) rowOf[n.i].classList.add("path"); });
  }

  // --- the conversation ---------------------------------------------------------------------------
  var SAFE_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*$/;
  function image(parent, b) {
    if (!SAFE_IMAGE.test(b.src)) return;
    var img = el("img", "shot");
    img.alt = "image";
    img.src = b.src;
    parent.appendChild(img);
  }
  function html(cls, markup) { var d = el("div", cls); d.innerHTML = markup; return d; }  // server-sanitised (nh3)
  function output(b) { return el("pre", "output" + (b.e ? " error" : ""), b.x || ""); }
  function block(parent, b, results) {
    if (b.k === "text") parent.appendChild(html("md", b.h));
    else if (b.k === "thinking") {
      var t = el("details", "thinking");
      t.appendChild(el("summary", null, "Thinking"));
      var inner = el("div");
      inner.appendChild(html("md", b.h));
      t.appendChild(inner);
      parent.appendChild(t);
    } else if (b.k === "tool_call") {
      var d = el("details", "tool"), s = el("summary");
      s.appendChild(el("span", "tool-name", b.nm));
      if (b.x) s.appendChild(doc.createTextNode(" " + b.x));
      d.appendChild(s);
      var body = el("div");
      body.appendChild(html("args", b.h));
      var res = results[b.id];
      if (res) (res.b || []).forEach(function (rb) { if (rb.k === "output") body.appendChild(output(rb)); else if (rb.k === "image") image(body, rb); });
      d.appendChild(body);
      parent.appendChild(d);
    } else if (b.k === "output") parent.appendChild(output(b));
    else if (b.k === "image") image(parent, b);
  }
  function reviewHead(cls, who, when) {
    var head = el("div", "rv-head");
    if (cls) head.appendChild(cls);
    head.appendChild(el("span", "who", who));
    head.appendChild(el("span", "meta", when));
    return head;
  }
  function reviewBox(e) {
    var ts = R.threads[e.i], vs = R.verdicts[e.i];
    if (!ts && !vs) return null;
    var box = el("div", "reviews");
    (vs || []).forEach(function (v) {
      var d = el("div", "verdict v-" + v.v), kind = VERDICTS[v.v] || ["?", v.v];
      d.id = "verdict-" + v.id;
      d.appendChild(reviewHead(el("span", "vm v-" + v.v, kind[0] + " " + kind[1]), v.a, v.t));
      if (v.h) d.appendChild(html("md", v.h));
      var names = Object.keys(v.s || {});
      if (names.length) d.appendChild(el("div", "meta", names.map(function (n) { return n + ": " + JSON.stringify(v.s[n]); }).join(" · ")));
      box.appendChild(d);
    });
    (ts || []).forEach(function (root) {
      var t = el("div", "thread" + (root.r ? " resolved" : ""));
      [root].concat(root.replies).forEach(function (c) {
        var d = el("div", "comment" + (c.p != null ? " reply" : ""));
        d.id = "comment-" + c.id;
        d.appendChild(reviewHead(null, c.a, c.t + (c.ed ? " (edited)" : "")));
        d.appendChild(c.h == null ? el("p", "muted", "Comment deleted.") : html("md", c.h));
        t.appendChild(d);
      });
      if (root.r) t.appendChild(el("p", "muted", "Resolved."));
      box.appendChild(t);
    });
    return box;
  }
  function deepLink(leaf, target) {
    var q = new URLSearchParams();
    if (leaf) q.set("leafId", leaf);
    if (target) q.set("targetId", target);
    if (mode !== "default") q.set("filter", mode);
    if (query) q.set("q", query);
    return "?" + q.toString();
  }
  function switcher(e) {
    var sibs = siblings(e);
    if (!sibs || sibs.length < 2) return null;
    var at = sibs.indexOf(e), box = el("span", "sibs");
    var prev = el("button", null, "‹"), next = el("button", null, "›");
    prev.type = next.type = "button";
    prev.title = "Previous branch";
    next.title = "Next branch";
    prev.disabled = at <= 0;
    next.disabled = at >= sibs.length - 1;
    prev.addEventListener("click", function () { if (at > 0) open(sibs[at - 1].i, true); });
    next.addEventListener("click", function () { if (at < sibs.length - 1) open(sibs[at + 1].i, true); });
    box.appendChild(prev);
    box.appendChild(el("span", "sib-pos", (at + 1) + "/" + sibs.length));
    box.appendChild(next);
    return box;
  }
  function card(e, results) {
    if (!e.k) return null;
    var div = el("div", "msg m-" + e.k);
    div.id = "entry-" + e.i;
    if (e.k === "marker") { div.textContent = e.ti; return div; }
    var head = el("div", "msg-head");
    head.appendChild(el("span", "who", e.ti));
    if (labels[e.i]) head.appendChild(el("span", "badge", labels[e.i]));
    if (e.m) head.appendChild(el("span", "meta", e.m));
    var sw = switcher(e);
    if (sw) head.appendChild(sw);
    var link = el("button", "link", "Link");
    link.type = "button";
    link.addEventListener("click", function () {
      var url = location.href.split("?")[0] + deepLink(leafId, e.i);
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url);
      link.textContent = "Copied";
      link.dataset.url = url;
    });
    head.appendChild(link);
    div.appendChild(head);
    (e.b || []).forEach(function (b) { block(div, b, results); });
    if (e.n) div.appendChild(el("p", "note", e.n));
    var rv = reviewBox(e);
    if (rv) div.appendChild(rv);
    return div;
  }
  function drawConv(keepSpan) {
    var conv = doc.getElementById("conv"), path = pathTo(leafId), results = Object.create(null), calls = Object.create(null);
    conv.textContent = "";
    path.forEach(function (e) {
      if (e.c) results[e.c] = e;
      (e.b || []).forEach(function (b) { if (b.k === "tool_call" && b.id) calls[b.id] = 1; });
    });
    var at = path.map(function (n) { return n.i; }).indexOf(targetId);
    if (at < 0) at = path.length - 1;
    if (!keepSpan) span = { from: Math.max(0, at - WINDOW), to: Math.min(path.length, at + WINDOW + 1) };
    if (span.from > 0) conv.appendChild(more("Show " + Math.min(WINDOW, span.from) + " earlier entries", function () { span.from = Math.max(0, span.from - WINDOW); }));
    for (var i = span.from; i < span.to; i++) {
      var e = path[i];
      if (e.k === "tool" && e.c && calls[e.c]) {  // drawn under its call, and so are its reviews
        var rb = reviewBox(e), last = conv.lastChild;
        if (rb && last && last.classList.contains("msg")) last.appendChild(rb);
        continue;
      }
      var c = card(e, results);
      if (!c) continue;
      if (e.i === targetId) c.classList.add("target");
      conv.appendChild(c);
    }
    if (span.to < path.length) conv.appendChild(more("Show " + Math.min(WINDOW, path.length - span.to) + " later entries", function () { span.to = Math.min(path.length, span.to + WINDOW); }));
    if (!path.length) conv.appendChild(el("p", "muted", "This session has no entries."));
  }
  function more(text, grow) {
    var b = el("button", "more", text);
    b.type = "button";
    b.addEventListener("click", function () { grow(); drawConv(true); });
    return b;
  }

  // --- moving around ------------------------------------------------------------------------------
  function remember() {
    try { history.replaceState(null, "", deepLink(leafId, targetId)); } catch (err) { /* a file: URL may refuse */ }
  }
  function open(id, scroll) {
    if (!by[id]) return;
    if (!onPath[id]) leafId = newestLeaf(id);
    targetId = id;
    markPath();
    var old = doc.querySelector("#tree .row.sel");
    if (old) old.classList.remove("sel");
    if (rowOf[id]) { rowOf[id].classList.add("sel"); rowOf[id].scrollIntoView({ block: "nearest" }); }
    matchAt = matches.indexOf(id);
    status();
    drawConv(false);
    remember();
    var t = doc.getElementById("entry-" + id);
    if (t && scroll !== false) t.scrollIntoView({ block: "start" });
  }
  function step(by1) {
    if (!matches.length) return;
    matchAt = matchAt < 0 ? (by1 > 0 ? 0 : matches.length - 1) : (matchAt + by1 + matches.length) % matches.length;
    open(matches[matchAt]);
  }
  function visibleRows() { return Array.prototype.slice.call(doc.querySelectorAll("#tree .row")); }

  doc.getElementById("about").textContent = [meta.header.id, meta.header.timestamp, meta.header.cwd, E.length + " entries"].filter(Boolean).join(" · ");
  var filters = doc.getElementById("filters");
  FILTERS.forEach(function (f) {
    var b = el("button", f === mode ? "on" : "", f);
    b.type = "button";
    b.setAttribute("aria-pressed", f === mode ? "true" : "false");
    b.addEventListener("click", function () {
      mode = f;
      Array.prototype.forEach.call(filters.children, function (x) { x.className = x === b ? "on" : ""; x.setAttribute("aria-pressed", x === b ? "true" : "false"); });
      drawTree();
      remember();
    });
    filters.appendChild(b);
  });
  var q = doc.getElementById("q"), timer = null;
  q.value = query;
  q.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { query = q.value; drawTree(); remember(); }, 150);
  });
  q.addEventListener("keydown", function (ev) {
    if (ev.key === "ArrowDown" || (ev.key === "Enter" && !ev.shiftKey)) { ev.preventDefault(); clearTimeout(timer); if (query !== q.value) { query = q.value; drawTree(); } step(1); }
    else if (ev.key === "ArrowUp" || (ev.key === "Enter" && ev.shiftKey)) { ev.preventDefault(); step(-1); }
  });
  doc.getElementById("next").addEventListener("click", function () { step(1); });
  doc.getElementById("prev").addEventListener("click", function () { step(-1); });
  var tree = doc.getElementById("tree");
  tree.addEventListener("click", function (ev) {
    var r = ev.target.closest && ev.target.closest(".row");
    if (r) open(r.dataset.id, true);
  });
  tree.addEventListener("keydown", function (ev) {
    var rows = visibleRows(), cur = rowOf[targetId], i = rows.indexOf(cur);
    if (ev.key === "ArrowDown" && i < rows.length - 1) open(rows[i + 1].dataset.id, false);
    else if (ev.key === "ArrowUp" && i > 0) open(rows[i - 1].dataset.id, false);
    else if (ev.key === "/") q.focus();
    else return;
    ev.preventDefault();
  });

  function linkedComment() { var m = /^#comment-(\d+)$/.exec(location.hash); return m && R.comments[m[1]]; }
  window.addEventListener("hashchange", function () {
    var c = linkedComment();
    if (!c || !by[c.e]) return;
    open(c.e, false);
    var n = doc.getElementById("comment-" + c.id);
    if (n) n.scrollIntoView({ block: "start" });
  });
  var linked = linkedComment();
  if (linked && by[linked.e]) {
    targetId = linked.e;
    if (pathTo(leafId).indexOf(by[targetId]) < 0) leafId = newestLeaf(targetId);
  }
  markPath();
  drawTree();
  drawConv(false);
  var first = doc.getElementById(linked ? "comment-" + linked.id : "entry-" + targetId) || doc.getElementById("entry-" + targetId);
  if (first) first.scrollIntoView({ block: "start" });
})();
