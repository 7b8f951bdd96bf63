// flexmg view: renders the episodes embedded in #flexmg-data. Every text from the data is
// shown with textContent / text nodes only (never parsed as HTML): an action is hostile text.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("flexmg-data").textContent);
  const EPS = DATA.episodes;
  const GROUPS = DATA.groups;
  const SHOW = 1500; // characters of a text shown before its expander
  const PAGE = 50; // episodes per page
  const state = { tab: "episodes", group: "all", outcome: "all", role: "", check: "any",
    q: "", inMessages: false, page: 0, comparison: 0, change: "all", cpage: 0 };

  function el(tag, cls, children) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    for (const c of children || []) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  function fmt(x, signed) {
    if (x === null || x === undefined || typeof x !== "number") return "\u2014";
    const s = x.toFixed(3);
    return signed && x >= 0 ? "+" + s : s;
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function codePoints(text) { let n = 0; for (const _ of text) n++; return n; }
  function headOf(text, n) { // the first n characters (code points: no half emoji)
    let units = 0;
    for (const ch of text) { if (n-- <= 0) break; units += ch.length; }
    return text.slice(0, units);
  }

  function longText(text, cls) {
    text = String(text);
    const box = el("div", "text " + (cls || ""));
    const pre = el("pre", "body");
    box.appendChild(pre);
    if (text.length <= SHOW || codePoints(text) <= SHOW) {
      pre.textContent = text;
      return box;
    }
    const short = headOf(text, SHOW) + " \u2026";
    const label = "show all (" + codePoints(text).toLocaleString("en-US") + " characters)";
    pre.textContent = short;
    const btn = el("button", "expand", [label]);
    btn.type = "button";
    let open = false;
    btn.addEventListener("click", function (ev) {
      ev.stopPropagation();
      open = !open;
      pre.textContent = open ? text : short;
      btn.textContent = open ? "show less" : label;
    });
    box.appendChild(btn);
    return box;
  }

  function flag(name, value, what) {
    const mark = value === true ? "\u2713" : value === false ? "\u2717" : "\u2014";
    const node = el("span", "chip flag " + (value === true ? "ok" : value === false ? "bad" : "na"),
      [name + " " + mark]);
    node.title = what + (value === null || value === undefined ? ": not reported by the env" : "");
    return node;
  }

  function lastTurnOf(ep, role) {
    for (let i = ep.turns.length - 1; i >= 0; i--) if (ep.turns[i].role === role) return ep.turns[i];
    return null;
  }

  function roleRewards(ep) {
    const sums = {};
    for (const t of ep.turns) sums[t.role] = (sums[t.role] || 0) + t.reward;
    return sums;
  }

  // ------------------------------------------------------------------ one episode
  function renderTurn(ep, t) {
    const head = el("div", "turn-head", [
      el("span", "role", [t.role]),
      el("span", "pos", ["#" + (t.position + 1)]),
      el("span", "chip reward", ["reward " + fmt(t.reward, true)]),
      flag("format", t.format_ok, "format_ok: a well-formed answer"),
      flag("correct", t.answer_correct, "answer_correct: the answer's value is right"),
      flag("own", t.own_correct, "own_correct: the role's own answer graded correct"),
    ]);
    for (const key of Object.keys(t.annotations)) {
      head.appendChild(el("span", "chip ann ann-" + key.replace(/[^a-z0-9_]/gi, ""),
        [key + " " + fmt(t.annotations[key], key !== "value")]));
    }
    if (t.chars > SHOW) head.appendChild(el("span", "pos", [t.chars.toLocaleString("en-US") + " chars"]));
    const body = t.action === "" ? el("div", "action empty-message", ["(empty message)"]) : longText(t.action, "action");
    const node = el("div", "turn", [head, body]);
    node.dataset.role = t.role;
    if (t.note) node.appendChild(el("div", "note", [el("b", null, ["env on " + t.role + ": "]), longText(t.note)]));
    if (t.info.length) {
      const table = el("table", "info");
      for (const row of t.info) table.appendChild(el("tr", null, [el("td", null, [row[0]]), el("td", null, [row[1]])]));
      node.appendChild(el("details", null, [el("summary", null, ["details"]), table]));
    }
    const seen = el("details", "seen-box", [el("summary", null, ["what " + t.role + " saw"])]);
    seen.addEventListener("toggle", function () {
      if (!seen.open || seen.dataset.done) return;
      seen.dataset.done = "1";
      const parts = [["instructions", t.seen.instructions !== undefined ? t.seen.instructions : ep.roles[t.role] || ""],
        ["task", t.seen.task !== undefined ? t.seen.task : ep.prompt],
        ["feedback", t.seen.feedback || ""], ["context", t.seen.context || ""]];
      const box = el("div", "seen");
      for (const [name, text] of parts) {
        if (!text && name !== "context") continue;
        box.appendChild(el("h5", null, [name]));
        box.appendChild(longText(text || "(empty)"));
      }
      seen.appendChild(box);
    });
    node.appendChild(seen);
    return node;
  }

  function renderEpisode(ep) {
    const box = el("div", "conversation");
    const task = el("div", "task", [el("h4", null, ["Task " + ep.task_id + " \u00b7 " + ep.env + " \u00b7 seed " + (ep.seed === null ? "\u2014" : ep.seed)]), longText(ep.prompt, "prompt")]);
    if (ep.answer !== null) task.appendChild(el("div", "answer", [el("h4", null, ["gold answer"]), longText(ep.answer)]));
    box.appendChild(task);
    let round = null;
    let roundBox = null;
    for (const t of ep.turns) {
      if (t.round !== round) {
        round = t.round;
        roundBox = el("div", "round", [el("h4", null, ["Round " + (round + 1)])]);
        box.appendChild(roundBox);
      }
      if (state.role && t.role !== state.role) continue;
      roundBox.appendChild(renderTurn(ep, t));
    }
    box.appendChild(el("div", "outcome", [(ep.success ? "success" : "fail") + " \u00b7 score " + fmt(ep.score) +
      " \u00b7 " + plural(ep.rounds, "round") + (ep.truncated ? " \u00b7 truncated" : "")]));
    box.appendChild(el("details", null, [el("summary", null, ["episode metrics"]), longText(ep.metrics)]));
    return box;
  }

  function outcomeBadge(ep) { return el("span", "badge " + (ep.success ? "ok" : "fail"), [ep.success ? "success" : "fail"]); }

  function snippet(text) { text = text.replace(/\s+/g, " "); return text.length > 200 ? text.slice(0, 200) + "\u2026" : text; }

  function episodeCard(index) {
    const ep = EPS[index];
    const chips = el("span", "rewards");
    const sums = roleRewards(ep);
    for (const role of Object.keys(sums)) {
      if (state.role && role !== state.role) continue;
      chips.appendChild(el("span", "chip", [role + " " + fmt(sums[role], true)]));
    }
    const head = el("div", "ep-head", [outcomeBadge(ep),
      el("span", "meta", [GROUPS[ep.group].label + (GROUPS[ep.group].label.indexOf(ep.env) >= 0 ? "" : " \u00b7 " + ep.env) +
        " \u00b7 seed " + (ep.seed === null ? "\u2014" : ep.seed) + " \u00b7 " + ep.task_id +
        " \u00b7 score " + fmt(ep.score) + " \u00b7 " + plural(ep.rounds, "round")]),
      el("span", "prompt", [snippet(ep.prompt)]), chips]);
    head.tabIndex = 0;
    head.setAttribute("role", "button");
    const body = el("div", "ep-body");
    body.hidden = true;
    function toggle() {
      body.hidden = !body.hidden;
      if (!body.hidden && !body.firstChild) body.appendChild(renderEpisode(ep));
    }
    head.addEventListener("click", toggle);
    head.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(); } });
    const card = el("div", "episode", [head, body]);
    card.dataset.index = String(index);
    card.dataset.success = String(ep.success);
    return card;
  }

  // ------------------------------------------------------------------ filters
  for (const ep of EPS) ep.hay = (ep.prompt + "\n" + ep.task_id + "\n" + ep.env).toLowerCase();
  function matches(ep, anyGroup) {
    if (!anyGroup && state.group !== "all" && ep.group !== Number(state.group)) return false;
    if (state.outcome === "success" && !ep.success) return false;
    if (state.outcome === "fail" && ep.success) return false;
    if (state.role) {
      const t = lastTurnOf(ep, state.role);
      if (!t) return false;
      const c = state.check;
      if (c === "correct" && t.answer_correct !== true) return false;
      if (c === "wrong" && t.answer_correct !== false) return false;
      if (c === "format-ok" && t.format_ok !== true) return false;
      if (c === "format-bad" && t.format_ok !== false) return false;
      if (c === "absent" && (t.answer_correct !== null || t.format_ok !== null)) return false;
    }
    if (state.q) {
      if (ep.hay.indexOf(state.q) >= 0) return true;
      if (!state.inMessages) return false;
      if (ep.acts === undefined) ep.acts = ep.turns.map(function (t) { return t.action; }).join("\n").toLowerCase();
      return ep.acts.indexOf(state.q) >= 0;
    }
    return true;
  }

  function select(id, label, options, value, onChange) {
    const s = el("select");
    s.id = id;
    for (const [v, text] of options) {
      const o = el("option", null, [text]);
      o.value = v;
      s.appendChild(o);
    }
    s.value = value;
    s.addEventListener("change", function () { onChange(s.value); });
    return el("label", null, [label + " ", s]);
  }

  function controls(count) {
    const groups = [["all", "all (" + GROUPS.length + ")"]].concat(GROUPS.map(function (g, i) { return [String(i), g.label]; }));
    const roles = [["", "all roles"]].concat(DATA.roles.map(function (r) { return [r, r]; }));
    const search = el("input");
    search.type = "search";
    search.id = "f-search";
    search.placeholder = "search prompts";
    search.value = state.q;
    let timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.q = search.value.trim().toLowerCase(); state.page = 0; state.cpage = 0; render(); }, 150);
    });
    const inMsg = el("input");
    inMsg.type = "checkbox";
    inMsg.id = "f-in-messages";
    inMsg.checked = state.inMessages;
    inMsg.addEventListener("change", function () { state.inMessages = inMsg.checked; state.page = 0; render(); });
    const bar = el("div", "controls", [
      select("f-group", "source", groups, state.group, function (v) { state.group = v; state.page = 0; render(); }),
      select("f-outcome", "outcome", [["all", "all"], ["success", "success"], ["fail", "fail"]], state.outcome,
        function (v) { state.outcome = v; state.page = 0; state.cpage = 0; render(); }),
      select("f-role", "role", roles, state.role, function (v) { state.role = v; state.page = 0; state.cpage = 0; render(); }),
      select("f-check", "its answer", [["any", "any"], ["correct", "correct"], ["wrong", "wrong"],
        ["format-ok", "well formed"], ["format-bad", "badly formed"], ["absent", "not graded"]], state.check,
        function (v) { state.check = v; state.page = 0; state.cpage = 0; render(); }),
      search, el("label", null, [inMsg, "also in messages"]), count]);
    bar.querySelector("#f-check").disabled = !state.role;
    return bar;
  }

  function pager(page, pages, onPage) {
    const prev = el("button", null, ["\u2190 previous"]);
    const next = el("button", null, ["next \u2192"]);
    prev.type = next.type = "button";
    prev.disabled = page <= 0;
    next.disabled = page >= pages - 1;
    prev.addEventListener("click", function () { onPage(page - 1); });
    next.addEventListener("click", function () { onPage(page + 1); });
    return el("div", "pager", [prev, el("span", "page", ["page " + (page + 1) + " of " + Math.max(pages, 1)]), next]);
  }

  // ------------------------------------------------------------------ views
  const app = document.getElementById("app");
  const focusId = function () { return document.activeElement && document.activeElement.id; };

  function header() {
    const h = el("header", null, [el("h1", null, [DATA.title])]);
    if (DATA.notes.length) h.appendChild(el("ul", "notes", DATA.notes.map(function (n) { return el("li", null, [n]); })));
    const table = el("table", "groups", [el("tr", null, [el("th", null, ["source"]), el("th", null, ["episodes"]),
      el("th", null, ["success"]), el("th", null, ["mean score"])])]);
    for (const g of GROUPS) table.appendChild(el("tr", null, [el("td", null, [g.label]), el("td", "num", [g.episodes]),
      el("td", "num", [fmt(g.success_rate)]), el("td", "num", [fmt(g.score)])]));
    h.appendChild(table);
    if (DATA.skipped.length) h.appendChild(el("details", "skipped", [el("summary", null, [plural(DATA.skipped.length, "line") + " skipped"]),
      el("ul", null, DATA.skipped.map(function (s) { return el("li", null, [s]); }))]));
    const tabs = el("div", "tabs");
    const tabList = [["episodes", "Episodes"]];
    if (DATA.comparisons.length) tabList.push(["compare", "Side by side"]);
    for (const [id, label] of tabList) {
      const b = el("button", state.tab === id ? "active" : "", [label]);
      b.type = "button";
      b.id = "tab-" + id;
      b.addEventListener("click", function () { state.tab = id; render(); });
      tabs.appendChild(b);
    }
    h.appendChild(tabs);
    return h;
  }

  function episodesView() {
    const shown = [];
    let wins = 0;
    for (let i = 0; i < EPS.length; i++) if (matches(EPS[i])) { shown.push(i); if (EPS[i].success) wins++; }
    const count = el("span", "count", [shown.length + " of " + plural(EPS.length, "episode") +
      (shown.length ? " \u00b7 success " + fmt(wins / shown.length) : "")]);
    count.id = "count";
    const pages = Math.ceil(shown.length / PAGE);
    state.page = Math.min(state.page, Math.max(pages - 1, 0));
    const list = el("div", "list");
    list.id = "episodes";
    for (const i of shown.slice(state.page * PAGE, (state.page + 1) * PAGE)) list.appendChild(episodeCard(i));
    if (!shown.length) list.appendChild(el("div", "empty", ["no episode matches these filters"]));
    const onPage = function (p) { state.page = p; render(); window.scrollTo(0, 0); };
    return el("main", null, [controls(count), pages > 1 ? pager(state.page, pages, onPage) : null, list,
      pages > 1 ? pager(state.page, pages, onPage) : null]);
  }

  function compareView() {
    const comps = DATA.comparisons;
    const which = select("c-which", "compare", comps.map(function (c, i) { return [String(i), c.label]; }), String(state.comparison),
      function (v) { state.comparison = Number(v); state.cpage = 0; render(); });
    const change = select("c-change", "show", [["all", "all pairs"], ["changed", "outcome changed"], ["improved", "fail \u2192 success"],
      ["regressed", "success \u2192 fail"], ["same", "same outcome"]], state.change, function (v) { state.change = v; state.cpage = 0; render(); });
    const comp = comps[state.comparison];
    const ga = GROUPS[comp.a].label;
    const gb = GROUPS[comp.b].label;
    const pairs = comp.pairs.filter(function (p) {
      const a = EPS[p[0]];
      const b = EPS[p[1]];
      if (!matches(a, true) && !matches(b, true)) return false; // the pair's groups are fixed
      if (state.change === "changed") return a.success !== b.success;
      if (state.change === "improved") return !a.success && b.success;
      if (state.change === "regressed") return a.success && !b.success;
      if (state.change === "same") return a.success === b.success;
      return true;
    });
    const count = el("span", "count", [pairs.length + " of " + plural(comp.pairs.length, "pair") + " of episodes on the same prompt"]);
    count.id = "count";
    const bar = controls(count);
    bar.insertBefore(change, bar.firstChild);
    bar.insertBefore(which, bar.firstChild);
    bar.querySelector("#f-group").parentNode.hidden = true;
    const pages = Math.ceil(pairs.length / PAGE);
    state.cpage = Math.min(state.cpage, Math.max(pages - 1, 0));
    const list = el("div", "list");
    list.id = "pairs";
    for (const p of pairs.slice(state.cpage * PAGE, (state.cpage + 1) * PAGE)) {
      const a = EPS[p[0]];
      const b = EPS[p[1]];
      const head = el("div", "ep-head", [outcomeBadge(a), "\u2192", outcomeBadge(b), el("span", "meta", [a.task_id]),
        el("span", "prompt", [snippet(a.prompt)])]);
      head.tabIndex = 0;
      const body = el("div", "side");
      body.hidden = true;
      const toggle = function () {
        body.hidden = !body.hidden;
        if (!body.hidden && !body.firstChild) {
          body.appendChild(el("div", "side-a", [el("h3", null, [ga]), renderEpisode(a)]));
          body.appendChild(el("div", "side-b", [el("h3", null, [gb]), renderEpisode(b)]));
        }
      };
      head.addEventListener("click", toggle);
      head.addEventListener("keydown", function (ev) { if (ev.key === "Enter") toggle(); });
      const card = el("div", "pair", [head, body]);
      card.dataset.a = String(p[0]);
      card.dataset.b = String(p[1]);
      list.appendChild(card);
    }
    if (!pairs.length) list.appendChild(el("div", "empty", ["no pair matches these filters"]));
    const onPage = function (n) { state.cpage = n; render(); window.scrollTo(0, 0); };
    return el("main", null, [bar, el("p", "meta", ["left: " + ga + " \u00b7 right: " + gb]),
      pages > 1 ? pager(state.cpage, pages, onPage) : null, list]);
  }

  function render() {
    const focused = focusId();
    app.textContent = "";
    app.appendChild(header());
    app.appendChild(state.tab === "compare" && DATA.comparisons.length ? compareView() : episodesView());
    if (focused) {
      const again = document.getElementById(focused);
      if (again) {
        again.focus();
        if (again.type === "search") again.setSelectionRange(again.value.length, again.value.length);
      }
    }
    document.body.dataset.ready = "1";
  }
  render();
})();
