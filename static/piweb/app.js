/* piweb: theme, keyboard navigation of the session tree, folding, copy links, import progress.
   No framework; htmx does the requests. Every text written here goes through textContent. */
(function () {
  "use strict";
  var root = document.documentElement;
  var saved = null;
  try { saved = localStorage.getItem("piweb-theme"); } catch (e) { /* private mode */ }
  root.dataset.theme = saved || (window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");

  function toast(text, bad) {
    var t = document.getElementById("toast");
    if (!t) return;
    t.textContent = text;
    t.classList.add("show");
    t.classList.toggle("bad", !!bad);
    clearTimeout(t._timer);
    t._timer = setTimeout(function () { t.classList.remove("show"); }, bad ? 6000 : 1600);  // an error stays to be read
  }

  // --- tree ------------------------------------------------------------------------------------
  function tree() { return document.querySelector("[data-tree]"); }
  function visibleRows() {
    var t = tree();
    if (!t) return [];
    return Array.prototype.filter.call(t.querySelectorAll("li.node, summary.branch-head"), function (el) {
      return el.offsetParent !== null;
    });
  }
  function selected() { var t = tree(); return t && t.querySelector(".sel"); }
  function select(el, scroll) {
    var old = selected();
    if (old) { old.classList.remove("sel"); old.setAttribute("aria-selected", "false"); }
    if (!el) return;
    el.classList.add("sel");
    el.setAttribute("aria-selected", "true");
    if (scroll !== false) el.scrollIntoView({ block: "nearest" });
  }
  function segRows(seg) {
    return document.querySelectorAll('[data-tree] [data-seg="' + CSS.escape(seg) + '"]');
  }
  function setFold(head, folded) {
    var seg = head.dataset.seg;
    segRows(seg).forEach(function (el) { if (el !== head) el.classList.toggle("folded-away", folded); });
    head.classList.toggle("folded", folded);
    var btn = head.querySelector(".tog");
    if (btn) btn.setAttribute("aria-expanded", folded ? "false" : "true");
  }
  function isFoldable(el) { return el.matches("li.node[data-head]") && el.querySelector("button.tog"); }
  function branchOf(el) { return el.matches("summary.branch-head") ? el.parentElement : null; }
  function moveTo(el) { if (el) select(el); }

  function onTreeKey(ev) {
    var rows = visibleRows();
    if (!rows.length) return;
    var cur = selected();
    var i = cur ? rows.indexOf(cur) : -1;
    var k = ev.key;
    if (k === "ArrowDown" || k === "j") { moveTo(rows[(i + 1) % rows.length]); }
    else if (k === "ArrowUp" || k === "k") { moveTo(rows[(i - 1 + rows.length) % rows.length]); }
    else if (k === "ArrowLeft") {
      if (!cur) return;
      var det = branchOf(cur);
      if (det && det.open) { det.open = false; }
      else if (isFoldable(cur) && !cur.classList.contains("folded")) { setFold(cur, true); }
      else {
        for (var j = i - 1; j >= 0; j--) {
          if (rows[j].matches("[data-head], [data-branch], summary.branch-head")) { moveTo(rows[j]); break; }
        }
      }
    } else if (k === "ArrowRight") {
      if (!cur) return;
      var d = branchOf(cur);
      if (d && !d.open) { d.open = true; }
      else if (cur.classList.contains("folded")) { setFold(cur, false); }
      else {
        for (var n = i + 1; n < rows.length; n++) {
          if (rows[n].matches("[data-branch], summary.branch-head")) { moveTo(rows[n]); break; }
        }
      }
    } else if (k === "Enter") {
      if (!cur) return;
      var a = cur.querySelector("a.txt");
      if (a) a.click(); else { var dd = branchOf(cur); if (dd) dd.open = !dd.open; }
    } else if (k === "l" || k === "L") {
      if (cur) openLabelEditor(cur);
    } else { return; }
    ev.preventDefault();
  }

  function openLabelEditor(row) {
    var tpl = document.getElementById("label-form-template");
    var id = row.dataset.id;
    if (!tpl || !id) return;
    var old = document.querySelector("[data-tree] .label-form");
    if (old) old.parentElement.removeChild(old);
    var form = tpl.content.firstElementChild.cloneNode(true);
    form.querySelector("[name=entry]").value = id;
    var input = form.querySelector("[name=label]");
    input.value = row.dataset.label || "";
    var holder = document.createElement("li");
    holder.className = "label-row";
    holder.appendChild(form);
    row.insertAdjacentElement(row.tagName === "SUMMARY" ? "afterend" : "afterend", holder);
    if (window.htmx) htmx.process(holder);
    form.querySelector("[data-cancel]").addEventListener("click", function () {
      holder.remove(); var t = tree(); if (t) t.focus(); select(row);
    });
    input.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { e.preventDefault(); holder.remove(); var t = tree(); if (t) t.focus(); }
      e.stopPropagation();
    });
    input.focus();
  }

  // The search box: ↓ and ↑ move through the matches, Enter opens the chosen one (or, on the one
  // already open, the next); the page keeps the search, and the focus comes back to the box.
  var searchNav = false;
  function searchResults() {
    var t = tree();
    return t ? Array.prototype.slice.call(t.querySelectorAll(".results li.node")) : [];
  }
  function onSearchKey(ev) {
    var k = ev.key;
    if (k !== "ArrowDown" && k !== "ArrowUp" && k !== "Enter") return false;
    ev.preventDefault();
    var rows = searchResults();
    if (!rows.length) {  // no search (or no match): into the tree
      if (k === "ArrowUp") return true;
      var t = tree();
      t.focus();
      if (!selected()) select(visibleRows()[0]);
      return true;
    }
    var cur = selected(), i = rows.indexOf(cur);
    if (k === "Enter") {
      var pick = i >= 0 && !cur.classList.contains("focus") ? cur : rows[(i + 1) % rows.length];
      select(pick);
      var a = pick.querySelector("a.txt");
      if (a) { searchNav = true; a.click(); }
      return true;
    }
    select(k === "ArrowDown" ? rows[(i + 1) % rows.length] : rows[(i - 1 + rows.length) % rows.length]);
    return true;
  }
  function refocusSearch() {
    if (!searchNav) return;
    searchNav = false;
    var box = document.querySelector("[data-tree-search]");
    if (!box) return;
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }

  // A search or a filter chosen in the tree's form goes to the address bar (the rest of the URL as
  // it is now), so a reload or a copied link brings it back.
  function rememberTreeForm(ev) {
    // The swapped-in tree (htmx fires afterSwap on the new element); a late answer to a form the
    // explorer has since replaced lands outside the page and counts for nothing.
    var body = ev.detail && ev.detail.elt, form = document.getElementById("tree-form");
    if (!body || body.id !== "tree-body" || !document.body.contains(body) || !form) return;
    var box = form.querySelector("input[name=q]");  // (a share link's tree has filters, no search)
    var url = new URL(location.href), q = box ? box.value.trim() : "";
    var f = form.querySelector("input[name=filter]:checked");
    if (q) url.searchParams.set("q", q); else url.searchParams.delete("q");
    if (f && f.value !== "default") url.searchParams.set("filter", f.value); else url.searchParams.delete("filter");
    if (url.href !== location.href) history.replaceState(history.state, "", url.href);
  }
  document.addEventListener("htmx:afterSwap", rememberTreeForm);
  // The tree form reloads the tree on "input" from the search box (debounced) and on "change" from
  // the filters; the box's own "change", when it loses the focus, would reload it once more, behind
  // whatever the user did meanwhile (a fold, a result opened).
  document.addEventListener("change", function (ev) {
    if (ev.target.matches && ev.target.matches("[data-tree-search]")) ev.stopPropagation();
  }, true);

  // `i`: the context inspector ("What the model saw") at the selected node, else at the entry shown.
  function openContext() {
    var ex = document.getElementById("explorer"), row = selected();
    var id = (row && row.dataset.id) || (ex && (ex.dataset.target || ex.dataset.leaf));
    if (!ex || !ex.dataset.contextUrl || !id) return false;
    location.href = ex.dataset.contextUrl + "?entry=" + encodeURIComponent(id);
    return true;
  }

  // `c`: open the comment form under the selected node's message, if it is shown and may be commented.
  function commentOnSelected() {
    var row = selected(), ex = document.getElementById("explorer");
    var id = row && row.dataset.id;
    var msg = id && ex && ex.querySelector('#conversation .msg[data-id="' + CSS.escape(id) + '"]');
    var pop = msg && msg.querySelector("section.threads > details.comment-pop");
    if (!pop) return false;
    pop.open = true;
    pop.scrollIntoView({ block: "center" });
    var box = pop.querySelector("textarea");
    if (box) box.focus();
    return true;
  }
  document.addEventListener("keydown", function (ev) {
    var t = tree();
    if (!t) return;
    var tag = (ev.target.tagName || "").toLowerCase();
    var typing = tag === "input" || tag === "textarea" || tag === "select" || ev.target.isContentEditable;
    if (ev.target.matches && ev.target.matches("[data-tree-search]") && onSearchKey(ev)) return;
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (t.contains(document.activeElement) || document.activeElement === t || document.activeElement === document.body) {
      if (ev.key === "/") {
        var s = document.querySelector("[data-tree-search]");
        if (!s) return;
        ev.preventDefault();
        if (!s.getClientRects().length) showPane("tree");  // a phone showing the conversation
        s.focus();
        return;
      }
      if (ev.key === "c" && commentOnSelected()) { ev.preventDefault(); return; }
      if (ev.key === "i" && openContext()) { ev.preventDefault(); return; }
      onTreeKey(ev);
    }
  });

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("button.tog[data-fold]");
    if (btn) {
      var head = btn.closest("li.node");
      setFold(head, !head.classList.contains("folded"));
      select(head, false);
      ev.preventDefault();
      return;
    }
    var copy = ev.target.closest && ev.target.closest("[data-copy]");
    if (copy) {
      ev.preventDefault();
      var url = new URL(copy.getAttribute("data-copy"), location.href).href;
      var done = function () { toast("Link copied"); };
      if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(url).then(done, function () { prompt("Copy this link", url); }); }
      else { var ta = document.createElement("textarea"); ta.value = url; document.body.appendChild(ta); ta.select(); try { document.execCommand("copy"); done(); } catch (e) { prompt("Copy this link", url); } ta.remove(); }
      copy.dataset.copied = url;
      return;
    }
    var theme = ev.target.closest && ev.target.closest("[data-theme-toggle]");
    if (theme) {
      root.dataset.theme = root.dataset.theme === "dark" ? "light" : "dark";
      try { localStorage.setItem("piweb-theme", root.dataset.theme); } catch (e) { /* ignore */ }
      return;
    }
    var row = ev.target.closest && ev.target.closest("[data-tree] li.node, [data-tree] summary.branch-head");
    if (row) select(row, false);
  });

  function focusPage() {
    var t = tree();
    if (t) {
      var f = t.querySelector("li.node.focus") || t.querySelector("li.node.current");
      if (f) { select(f, false); f.scrollIntoView({ block: "center" }); }
    }
    var ex = document.getElementById("explorer");
    // An entry id may hold any character: find its message by data-id (CSS.escape), not by element id.
    var target = ex && ex.dataset.target && ex.querySelector('#conversation .msg[data-id="' + CSS.escape(ex.dataset.target) + '"]');
    if (target && location.hash !== "#composer") target.scrollIntoView({ block: "start" });
    if (location.hash === "#composer") {
      var c = document.getElementById("composer-text");
      if (c) { c.scrollIntoView({ block: "center" }); c.focus(); }
    }
  }

  document.addEventListener("DOMContentLoaded", function () { focusPage(); setupImport(); });
  document.addEventListener("htmx:afterSettle", function (ev) {
    var el = ev.detail && ev.detail.elt;
    if (el && (el.id === "explorer")) {
      focusPage();
      refocusSearch();
      if (el.hasAttribute("data-following")) notice(false);
      var conv = document.getElementById("conversation");
      if (live.scrollEnd && conv) conv.scrollTop = conv.scrollHeight;
      live.scrollEnd = false;
    }
    if (el && el.id === "chat-composer") { var ta = document.getElementById("composer-text"); if (ta && ta.value) ta.focus(); }
    if (el && el.id === "tree-body") { var first = el.querySelector("li.node.focus") || null; if (first) select(first, false); }
  });

  // --- live chat ---------------------------------------------------------------------------------
  // The socket (htmx ws extension on #chat) fills #session-live, #chat-streaming, #chat-presence and
  // #chat-parent. The explorer shows the path the viewer chose: a viewer on the leaf path (or who just
  // acted) follows the leaf; anyone else keeps their branch, gets a fresh tree and a "jump" notice.
  // inflight: htmx requests under way. An action's own swap (HX-Location) brings the new state, so
  // a frame about that change waits for it instead of reloading the explorer a second time.
  var live = { follow: false, timer: null, inflight: 0, waiting: false };
  function chatDock() { return document.getElementById("chat"); }
  function explorerEl() { return document.getElementById("explorer"); }
  function notice(show) { var n = document.getElementById("chat-notice"); if (n) n.hidden = !show; }
  function leafUrl(leaf) {
    var dock = chatDock(), ex = explorerEl();
    var q = new URLSearchParams();
    if (leaf) { q.set("leaf", leaf); q.set("target", leaf); }
    if (ex && ex.dataset.mode && ex.dataset.mode !== "default") q.set("filter", ex.dataset.mode);
    var qs = q.toString();
    return dock.dataset.url + (qs ? "?" + qs : "");
  }
  function loadLeaf(leaf) {
    if (!window.htmx || !chatDock()) return;
    var url = leafUrl(leaf);
    notice(false);
    live.scrollEnd = true;
    htmx.ajax("GET", url, { target: "#explorer", swap: "outerHTML" }).then(function () {
      history.replaceState(null, "", url);
    });
  }
  function refreshComposer() {
    // The model and thinking pickers show the context at the leaf, which another viewer may have
    // changed; redraw an idle composer (never one holding a draft or the focus).
    var form = document.getElementById("chat-composer"), ta = document.getElementById("composer-text");
    if (!form || !ta || ta.value || form.contains(document.activeElement) || !window.htmx) return;
    htmx.ajax("GET", chatDock().dataset.url, { target: "#chat-composer", select: "#chat-composer", swap: "outerHTML" });
  }
  function showCount() {
    // The header's message count follows the session (#session-live's data-count, from the socket).
    var state = document.getElementById("session-live"), out = document.querySelector("[data-message-count]");
    var n = state && state.dataset.count;
    if (!out || n === undefined || n === "") return;
    var text = n + (n === "1" ? " message" : " messages");
    if (out.textContent !== text) out.textContent = text;
  }
  function onLive() {
    showCount();
    if (live.timer) return;  // one refresh per burst; stream deltas must not postpone it
    live.timer = setTimeout(function () {
      live.timer = null;
      if (live.inflight > 0) { live.waiting = true; return; }
      var state = document.getElementById("session-live"), ex = explorerEl();
      if (!state || !ex) return;
      var leaf = state.dataset.leaf || "", seq = state.dataset.seq || "";
      if (seq === ex.dataset.seq && leaf === ex.dataset.sessionLeaf) return;
      if (!live.follow) refreshComposer();  // an action of ours brings its own composer
      if (live.follow || ex.hasAttribute("data-following")) {
        live.follow = false;
        // The session's leaf as it is when the page is drawn, not the one this frame named: the
        // page's data-seq then matches what it shows, so a reply that lands while it loads still
        // brings a frame with a newer seq (a named, older leaf would leave the page off the leaf
        // with an up-to-date seq, and nothing would reload it).
        loadLeaf("");
        return;
      }
      ex.dataset.seq = seq;
      var form = document.getElementById("tree-form");
      if (form && window.htmx) htmx.trigger(form, "change");  // new branches show in the tree at once
      if (leaf !== ex.dataset.sessionLeaf) notice(true);
    }, 120);
  }
  // Frames append to #chat-log and #chat-streaming; of the elements with one id the last one wins
  // (a repeated or replayed frame replaces the copy the page had), and an empty data-gone copy
  // removes it.
  function lastCopyWins(container) {
    var seen = {};
    Array.prototype.slice.call(container.children).reverse().forEach(function (el) {
      if (!el.id) return;
      if (seen[el.id]) el.remove();
      else seen[el.id] = true;
      if (el.hasAttribute("data-gone")) el.remove();
    });
  }
  // A review thread redrawn live arrives in #review-live; it replaces the entry's threads if that
  // entry is shown (an open reply form there is kept: it would lose what is being typed).
  // The entry's tree marks and the latest verdicts come along and replace theirs, wherever shown.
  function placeReviewThreads(box) {
    if (!box) return;
    Array.prototype.slice.call(box.querySelectorAll("section.threads")).forEach(function (fresh) {
      var shown = document.querySelector("#explorer section.threads#" + CSS.escape(fresh.id));
      if (shown && !shown.querySelector("textarea:focus")) {
        shown.replaceWith(fresh);
        htmx.process(fresh);
      }
    });
    Array.prototype.slice.call(box.querySelectorAll(".review-marks[data-marks-for]")).forEach(function (fresh) {
      var sel = '#tree-body .review-marks[data-marks-for="' + CSS.escape(fresh.getAttribute("data-marks-for")) + '"]';
      document.querySelectorAll(sel).forEach(function (shown) { shown.replaceWith(fresh.cloneNode(true)); });
    });
    var latest = box.querySelector("#verdict-latest"), shownLatest = document.querySelector("#review-panel #verdict-latest");
    if (latest && shownLatest) shownLatest.replaceWith(latest);
    box.textContent = "";
  }
  document.addEventListener("htmx:oobAfterSwap", function (ev) {
    var t = ev.detail && ev.detail.target;
    if (t && (t.id === "chat-log" || t.id === "chat-streaming")) lastCopyWins(t);
    if (t && t.id === "review-live") placeReviewThreads(document.getElementById("review-live"));
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    onLive();
    var st = document.getElementById("chat-streaming");
    if (st) st.scrollTop = st.scrollHeight;
  });
  document.addEventListener("htmx:beforeSwap", function (ev) {
    // A background composer redraw never replaces text that arrived meanwhile (continue, typing).
    var d = ev.detail, ta = document.getElementById("composer-text");
    if (d && d.requestConfig && d.requestConfig.verb === "get" && d.target && d.target.id === "chat-composer" && ta && ta.value) d.shouldSwap = false;
  });
  document.addEventListener("htmx:beforeRequest", function (ev) {
    var elt = ev.detail && ev.detail.elt;
    if (elt && elt.closest && elt.closest("[data-chat-action]")) live.follow = true;
  });
  document.addEventListener("htmx:beforeSend", function (ev) {
    // Counted on the request itself: htmx's afterRequest never reaches the document when its
    // element left the page meanwhile (the stop button goes with the stream it stops).
    var xhr = ev.detail && ev.detail.xhr;
    if (!xhr) return;
    live.inflight += 1;
    xhr.addEventListener("loadend", function () {
      live.inflight = Math.max(0, live.inflight - 1);
      if (!live.inflight && live.waiting) { live.waiting = false; onLive(); }
    });
  });
  document.addEventListener("htmx:afterRequest", function (ev) {
    var elt = ev.detail && ev.detail.elt;
    // "Show all" buttons go once their full output has replaced the cut one (no hx-on: the CSP
    // allows no eval).
    if (elt && elt.hasAttribute && elt.hasAttribute("data-remove-after-request") && ev.detail.successful) elt.remove();
    var det = elt && elt.closest && elt.closest("details.chat-edit, details.chat-nav, details.chat-compact");
    // A popover closes once its command went through; compaction's also when it failed (the
    // error shows in a toast: htmx:responseError), since there is nothing in it to correct.
    if (det && (ev.detail.successful || det.classList.contains("chat-compact"))) det.open = false;
  });
  document.addEventListener("htmx:responseError", function (ev) {
    var xhr = ev.detail && ev.detail.xhr;
    toast((xhr && xhr.responseText ? xhr.responseText : "The request failed").slice(0, 200), true);
  });
  document.addEventListener("click", function (ev) {
    var jump = ev.target.closest && ev.target.closest("#chat-notice [data-jump-leaf]");
    if (!jump) return;
    ev.preventDefault();
    var state = document.getElementById("session-live");
    loadLeaf(state ? state.dataset.leaf : "");
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && ev.target.id === "composer-text") {
      ev.preventDefault();
      ev.target.form.requestSubmit();
    }
  });

  // --- new chat: the session list's button, also on "n" while no field has the focus ---------------
  function typingIn(el) {
    var tag = (el && el.tagName || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || !!(el && el.isContentEditable);
  }
  function onNewChatKey(ev) {
    if (ev.key !== "n" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat || typingIn(ev.target)) return;
    var btn = document.querySelector("[data-new-chat]");
    if (!btn) return;
    ev.preventDefault();
    btn.click();
  }
  document.addEventListener("keydown", onNewChatKey);

  // --- phone and tablet: "Tree | Conversation" tabs, the menus (static/piweb/app.css, same title) --
  // Below 760 px the session page shows one pane at a time (.workspace[data-pane]); the top bar's
  // links, the session's actions and each message's actions open from a button (.menu-open).
  var MENU_TOGGLES = "[data-nav-toggle], [data-head-toggle], [data-acts-toggle]";
  var MENU_HOLDERS = ".topbar, .session-head, .msg";
  function showPane(name) {
    var ws = document.querySelector(".workspace[data-pane]");
    if (!ws || ws.dataset.pane === name) return;
    ws.dataset.pane = name;
    ws.querySelectorAll("[data-pane-tab]").forEach(function (tab) {
      tab.setAttribute("aria-selected", tab.dataset.paneTab === name ? "true" : "false");
    });
    var row = name === "tree" && selected();
    if (row) row.scrollIntoView({ block: "center" });  // it could not scroll while hidden
  }
  function setMenu(holder, open) {
    holder.classList.toggle("menu-open", open);
    var toggle = holder.querySelector(MENU_TOGGLES);
    if (toggle) toggle.setAttribute("aria-expanded", open ? "true" : "false");
  }
  function closeMenus(keep, inside) {
    document.querySelectorAll(".menu-open").forEach(function (el) {
      if (el !== keep && !(inside && el.contains(inside))) setMenu(el, false);
    });
  }
  var POPOVERS = "details.chat-edit[open], details.chat-nav[open], details.chat-compact[open], details.share-pop[open], details.label-edit[open]";
  function phoneLayout() { return !!(window.matchMedia && matchMedia("(max-width: 760px)").matches); }
  function closePopovers(inside) {
    // On a phone a popover is a sheet over the page: a tap outside it (or Escape) puts it away.
    if (!phoneLayout()) return;
    document.querySelectorAll(POPOVERS).forEach(function (d) { if (!(inside && d.contains(inside))) d.open = false; });
  }
  function onPhoneClick(ev) {
    var t = ev.target;
    if (!t.closest) return;
    closePopovers(t);
    var tab = t.closest("[data-pane-tab]");
    if (tab) { showPane(tab.dataset.paneTab); return; }
    if (t.closest("[data-tree] a.txt")) showPane("conversation");  // a row opens in the conversation
    var toggle = t.closest(MENU_TOGGLES);
    var holder = toggle && toggle.closest(MENU_HOLDERS);
    closeMenus(holder, t);
    if (holder) setMenu(holder, !holder.classList.contains("menu-open"));
  }
  function onPhoneKey(ev) {
    if (ev.key === "Escape") { closeMenus(null, null); closePopovers(null); return; }
    var tab = ev.target.closest && ev.target.closest("[data-pane-tab]");
    if (!tab || (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight")) return;
    var other = tab.parentElement.querySelector("[data-pane-tab]:not([data-pane-tab='" + tab.dataset.paneTab + "'])");
    if (other) { other.focus(); showPane(other.dataset.paneTab); ev.preventDefault(); }
  }
  document.addEventListener("click", onPhoneClick);
  document.addEventListener("keydown", onPhoneKey);

  // --- import: drag and drop, several files, upload and import progress -----------------------
  function setupImport() {
    var form = document.querySelector("form[data-import]");
    if (!form) return;
    var input = form.querySelector("input[type=file]");
    var progress = form.querySelector(".progress");
    var bar = progress.querySelector(".bar span");
    var text = progress.querySelector(".progress-text");
    var results = form.querySelector("#import-results");
    var token = form.querySelector("[name=csrfmiddlewaretoken]").value;

    // Each file: its upload is the first UPLOAD share of its part of the bar; the server-side
    // import (a background job whose fragment polls its progress every 300 ms) is the rest.
    var UPLOAD = 0.3;
    var job = null;  // the file being imported on the server: {id, name, index, count, done}
    function setBar(fraction) {
      var pct = Math.max(0, Math.min(100, fraction * 100));
      bar.style.width = pct + "%";
      bar.parentElement.setAttribute("aria-valuenow", String(Math.round(pct)));
    }
    function onJob(li) {
      // A job fragment arrived (the first answer or a poll): move the bar, or finish the file.
      if (!job || !li || li.getAttribute("data-job") !== job.id) return;
      if (li.hasAttribute("data-job-done")) {
        var finish = job.done;
        job = null;
        finish(li.classList.contains("ok"));
        return;
      }
      var total = Number(li.getAttribute("data-total")) || 1;
      var fraction = Math.min(1, (Number(li.getAttribute("data-done")) || 0) / total);
      setBar((job.index + UPLOAD + (1 - UPLOAD) * fraction) / job.count);
      text.textContent = "Importing " + job.name + " on the server (" + (job.index + 1) + "/" + job.count + "): " + Math.round(fraction * 100) + "%";
    }
    document.addEventListener("htmx:load", function (ev) {
      var el = ev.detail && ev.detail.elt;
      if (el && el.closest && el.closest("#import-results")) onJob(el.closest("[data-job]"));
    });

    function send(files) {
      files = Array.prototype.slice.call(files);
      if (!files.length) return;
      progress.hidden = false;
      var i = 0, okCount = 0;
      function advance(ok) {
        if (ok) okCount++;
        setBar((i + 1) / files.length);
        i++; next();
      }
      function next() {
        if (i >= files.length) {
          text.textContent = okCount + " of " + files.length + " file" + (files.length > 1 ? "s" : "") + " imported";
          setBar(1);
          progress.classList.remove("busy");
          if (window.htmx && document.getElementById("session-table")) htmx.ajax("GET", location.pathname + location.search, { target: "#session-table", swap: "outerHTML", select: "#session-table" });
          return;
        }
        var file = files[i];
        var data = new FormData();
        data.append("files", file, file.name);
        data.append("background", "1");
        var xhr = new XMLHttpRequest();
        xhr.open("POST", form.action);
        xhr.setRequestHeader("X-CSRFToken", token);
        xhr.setRequestHeader("HX-Request", "true");
        xhr.upload.onprogress = function (e) {
          if (!e.lengthComputable) return;
          var pct = Math.round((e.loaded / e.total) * 100);
          setBar((i + UPLOAD * pct / 100) / files.length);
          text.textContent = "Uploading " + file.name + " (" + (i + 1) + "/" + files.length + "): " + pct + "%";
        };
        xhr.upload.onload = function () {
          setBar((i + UPLOAD) / files.length);
          text.textContent = "Importing " + file.name + " on the server (" + (i + 1) + "/" + files.length + ")…";
        };
        xhr.onload = function () {
          var holder = document.createElement("ul");
          holder.innerHTML = xhr.responseText; // server-rendered, autoescaped template fragment
          var items = Array.prototype.slice.call(holder.children);
          items.forEach(function (li) { results.appendChild(li); });
          var first = items[0];
          if (xhr.status === 202 && first && first.hasAttribute("data-job")) {
            job = { id: first.getAttribute("data-job"), name: file.name, index: i, count: files.length, done: advance };
            if (window.htmx) htmx.process(first);
            onJob(first);
            return;
          }
          advance(xhr.status === 200);
        };
        xhr.onerror = function () {
          var li = document.createElement("li");
          li.className = "import-result bad";
          li.textContent = file.name + ": the upload failed (network error).";
          results.appendChild(li);
          advance(false);
        };
        xhr.send(data);
      }
      results.textContent = "";
      next();
    }
    input.addEventListener("change", function () { send(input.files); input.value = ""; });
    ["dragenter", "dragover"].forEach(function (n) {
      form.addEventListener(n, function (e) { e.preventDefault(); form.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (n) {
      form.addEventListener(n, function (e) { e.preventDefault(); form.classList.remove("over"); });
    });
    form.addEventListener("drop", function (e) { if (e.dataTransfer) send(e.dataTransfer.files); });
    form.addEventListener("submit", function (e) { e.preventDefault(); send(input.files); });
  }
})();

// Search across sessions: Ctrl+K (Cmd+K) focuses the header box from anywhere ("/" stays the tree
// search on a session page); on /search/ the arrows or j/k move between hits and Enter opens one.
(function () {
  document.addEventListener("keydown", function (ev) {
    if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && (ev.key === "k" || ev.key === "K")) {
      var box = document.querySelector("[data-search-page-box]") || document.querySelector("[data-header-search]");
      if (!box) return;
      ev.preventDefault();
      // On a phone the header's box is in the ☰ menu, hidden until it opens: open it first.
      var bar = !box.getClientRects().length && box.closest(".topbar");
      if (bar) {
        bar.classList.add("menu-open");
        var toggle = bar.querySelector("[data-nav-toggle]");
        if (toggle) toggle.setAttribute("aria-expanded", "true");
      }
      box.focus();
      box.select();
      return;
    }
    var hits = Array.prototype.slice.call(document.querySelectorAll("[data-search-hit]"));
    if (!hits.length || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var tag = (ev.target.tagName || "").toLowerCase();
    var inBox = ev.target.matches && ev.target.matches("[data-search-page-box]");
    if ((tag === "input" || tag === "textarea" || tag === "select") && !(inBox && ev.key === "ArrowDown")) return;
    var at = hits.indexOf(document.activeElement);
    var step = ev.key === "ArrowDown" || ev.key === "j" ? 1 : ev.key === "ArrowUp" || ev.key === "k" ? -1 : 0;
    if (!step) return;
    ev.preventDefault();
    var next = at < 0 ? 0 : Math.max(0, Math.min(hits.length - 1, at + step));
    hits[next].focus();
  });
})();
