// attncli page: draws compute's tables from the data, and explain's steps for any number clicked. No requests.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const S = D.S;
  let lang = "en";
  let opened = null;  // [table index, shown row, shown column] of the cell whose panel is open
  let pathAt = 0;
  let goto = null;  // the first table of the walkthrough's step
  const $ = (id) => document.getElementById(id);
  const ui = (key) => D.ui[lang][key];
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (m, k) => (k in values ? values[k] : m));
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // -- colours: attncli's one scale (views/colours.py), the same ramp the terminal tables use
  function heat(t) {
    t = Math.min(Math.max(t, 0), 1);
    if (!(t >= D.low)) return null;
    const x = (t - D.low) / (1 - D.low) * (D.ramp.length - 1);
    const i = Math.min(Math.floor(x), D.ramp.length - 2);
    const a = D.ramp[i], b = D.ramp[i + 1];
    return "rgb(" + a.map((p, k) => Math.round(p + (b[k] - p) * (x - i))).join(",") + ")";
  }

  // signed quantities (the gradients): blue below 0, orange above, as attncli heatmap draws them (views/colours.py)
  function signedHeat(s) {
    s = Math.min(Math.max(s, -1), 1);
    if (!(Math.abs(s) >= D.low)) return null;
    const ramp = D.signed[s < 0 ? 0 : 1];
    const x = (Math.abs(s) - D.low) / (1 - D.low) * (ramp.length - 1);
    const i = Math.min(Math.floor(x), ramp.length - 2);
    const a = ramp[i], b = ramp[i + 1];
    return "rgb(" + a.map((p, k) => Math.round(p + (b[k] - p) * (x - i))).join(",") + ")";
  }

  // -- tokens: row n:i and column n:j light up together (in self-attention the keys are the queries' tokens)
  const tokenOf = (axis, index) => (axis === "n" || (axis === "m" && !D.cross) ? "n" + index : axis === "m" ? "m" + index : null);
  let lit = [];
  function light(tokens) {
    lit.forEach((e) => e.classList.remove("hot"));
    lit = [];
    for (const tok of tokens) {
      if (!tok) continue;
      const q = '"' + tok + '"]';
      document.querySelectorAll("[data-t=" + q + ", td[data-rt=" + q + ", td[data-ct=" + q).forEach((e) => { e.classList.add("hot"); lit.push(e); });
    }
  }

  // -- tables
  const figures = [];
  function drawTable(t, ti) {
    const fig = el("figure", { "data-head": t.head === null ? "" : String(t.head) });
    const cap = el("figcaption", { id: "cap" + ti });
    fig.appendChild(cap);
    const scroll = el("div", { class: "scroll" });
    const table = el("table", { role: "grid", "aria-labelledby": "cap" + ti, "data-ti": String(ti), "data-key": t.key });
    const head = el("tr");
    head.appendChild(el("th", {}, ""));
    t.c.forEach((j, c) => {
      const th = el("th", { scope: "col" }, j === null ? "…" : t.cl[c]);
      const tok = j === null ? null : tokenOf(t.colAxis, j);
      if (tok) { th.setAttribute("data-t", tok); th.classList.add("tok"); }
      head.appendChild(th);
    });
    const thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    const body = el("tbody");
    const hatched = new Set(t.mk);
    t.r.forEach((i, r) => {
      const tr = el("tr");
      const th = el("th", { scope: "row" }, i === null ? "⋮" : t.rl[r]);
      const rowTok = i === null ? null : tokenOf(t.rowAxis, i);
      if (rowTok) { th.setAttribute("data-t", rowTok); th.classList.add("tok"); }
      tr.appendChild(th);
      t.c.forEach((j, c) => {
        const v = t.v[r][c];
        const td = el("td", { role: "gridcell", tabindex: "-1" }, v === null ? "" : v);
        if (i === null || j === null) { td.className = "gap"; td.removeAttribute("tabindex"); }
        else {
          td.setAttribute("data-rc", r + "," + c);
          const colTok = tokenOf(t.colAxis, j);
          if (rowTok) td.setAttribute("data-rt", rowTok);
          if (colTok) td.setAttribute("data-ct", colTok);
          if (hatched.has(r + "," + c)) td.className = "masked";
          else if (t.signed) {
            const colour = signedHeat(parseFloat(v) / t.signed);
            if (colour) { td.style.background = colour; td.classList.add("heat"); }
            td.title = t.rl[r] + " → " + t.cl[c] + ": " + v;
          } else if (t.heat) {
            const [lo, hi] = t.heat;
            const colour = heat(hi > lo ? (parseFloat(v) - lo) / (hi - lo) : 0.5);
            if (colour) { td.style.background = colour; td.classList.add("heat"); }
            td.title = t.rl[r] + " → " + t.cl[c] + ": " + v;
          }
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    const first = table.querySelector("td[data-rc]");
    if (first) first.tabIndex = 0;
    scroll.appendChild(table);
    fig.appendChild(scroll);
    if (t.r.length < t.n || t.c.length < t.m || t.r.includes(null) || t.c.includes(null)) {
      fig.appendChild(el("p", { class: "note", "data-shown": "1" }));
    }
    figures.push([fig, t]);
    return fig;
  }

  // a label that differs by language (a linear: document's "Head 1" columns: t.rls, t.cls), else the one label
  const rowLabel = (t, r) => (t.rls ? t.rls[lang] : t.rl)[r];
  const colLabel = (t, c) => (t.cls ? t.cls[lang] : t.cl)[c];
  function label() {
    figures.forEach(([fig, t]) => {
      fig.querySelector("figcaption").textContent = t.title[lang];
      if (t.cls) fig.querySelectorAll("thead th").forEach((th, c) => { if (c && t.c[c - 1] !== null) th.textContent = colLabel(t, c - 1); });
      if (t.rls) fig.querySelectorAll("tbody th").forEach((th, r) => { if (t.r[r] !== null) th.textContent = rowLabel(t, r); });
      const note = fig.querySelector(".note");
      if (note) {
        note.textContent = fill(ui("shown"), { rows: t.r.filter((x) => x !== null).length, n: t.n,
          columns: t.c.filter((x) => x !== null).length, m: t.m });
      }
      fig.querySelectorAll("td.masked").forEach((td) => {
        const [r, c] = td.getAttribute("data-rc").split(",").map(Number);
        if (t.v[r][c] === null) td.textContent = D.masked[lang];
      });
    });
  }

  // -- keyboard: each table is one stop of Tab; the arrow keys, Home and End move inside it; Enter opens
  function move(td, dr, dc) {
    const table = td.closest("table");
    const [r, c] = td.getAttribute("data-rc").split(",").map(Number);
    const rows = table.tBodies[0].rows;
    let nr = r, nc = c;
    for (let step = 0; step < 64; step++) {
      nr += dr; nc += dc;
      if (nr < 0 || nc < 0 || nr >= rows.length || nc >= rows[0].cells.length - 1) return;
      const next = rows[nr].cells[nc + 1];
      if (next && next.hasAttribute("data-rc")) { focusCell(next); return; }
    }
  }
  function focusCell(td) {
    const table = td.closest("table");
    table.querySelectorAll('td[tabindex="0"]').forEach((e) => { e.tabIndex = -1; });
    td.tabIndex = 0;
    td.focus();
  }
  function onKey(e) {
    const td = e.target.closest("td[data-rc]");
    if (!td) return;
    const moves = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] };
    if (moves[e.key]) { e.preventDefault(); move(td, ...moves[e.key]); }
    else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      const cells = td.parentElement.querySelectorAll("td[data-rc]");
      focusCell(cells[e.key === "Home" ? 0 : cells.length - 1]);
    } else if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(td); }
    else if (e.key === "Escape") close();
  }

  // -- the panel: the cell's steps of explain, its lines marked
  function stepOf(head, query, number) {
    const list = D.focus[lang][head + "," + query];
    if (!list) return null;
    for (const k of list) if (D.steps[k][0] === number) return D.steps[k];
    return null;
  }
  function drawStep(step, marked, into) {
    into.appendChild(el("h3", {}, S[step[1]]));
    into.appendChild(el("p", { class: "formula" }, S[step[2]]));
    step[3].forEach((p) => into.appendChild(el("p", {}, S[p])));
    if (step[4].length) {
      const ol = el("ol", { class: "lines" });
      step[4].forEach((l, k) => {
        const li = el("li", {}, S[l]);
        if (marked && marked.includes(k)) li.className = "hl";
        if (step[7] && step[7][k] !== null) li.appendChild(drawMatrix(D.M[step[7][k]]));
        ol.appendChild(li);
      });
      into.appendChild(ol);
    }
    step[5].forEach((p) => into.appendChild(el("p", { class: "note" }, S[p])));
  }
  // a state a step's line talks about (a linear: document's delta rule): its rows k1 …, its columns 1 …
  function drawMatrix(m) {
    const table = el("table", { class: "state" });
    const head = el("tr");
    head.appendChild(el("th", {}, "S"));
    m.cl.forEach((c) => head.appendChild(el("th", { scope: "col" }, c)));
    table.appendChild(head);
    m.v.forEach((row, r) => {
      const tr = el("tr");
      tr.appendChild(el("th", { scope: "row" }, m.rl[r]));
      row.forEach((v) => tr.appendChild(el("td", {}, v)));
      table.appendChild(tr);
    });
    return table;
  }
  // a gradient's cell: its formula, why it holds, and its sums term by term (the total marked)
  function drawGradient(entry, into) {
    if (!entry) {  // 0: past the table's share of cells written out; null: a stage the page does not write out
      into.appendChild(el("p", { class: "note" }, D.grads[lang][entry === 0 ? "spent" : "not_worked"]));
      return;
    }
    const k = lang === "zh" ? 1 : 0;
    into.appendChild(el("h3", { class: "formula" }, S[entry[0]]));
    entry[1][k].forEach((p) => into.appendChild(el("p", {}, S[p])));
    const ol = el("ol", { class: "lines grad" });
    entry[2][k].forEach((l, n) => ol.appendChild(el("li", n === entry[2][k].length - 1 ? { class: "hl" } : {}, S[l])));
    into.appendChild(ol);
  }
  function open(td) {
    const ti = Number(td.closest("table").getAttribute("data-ti"));
    const [r, c] = td.getAttribute("data-rc").split(",").map(Number);
    document.querySelectorAll("td.open").forEach((e) => e.classList.remove("open"));
    td.classList.add("open");
    opened = [ti, r, c];
    showCell();
  }
  function showCell() {
    const [ti, r, c] = opened;
    const t = D.tables[ti];
    const v = t.v[r][c];
    const what = { table: t.title[lang], row: rowLabel(t, r), column: colLabel(t, c), value: v };
    $("panel-title").textContent = fill(ui(v === null ? "masked_value" : "value"), what);
    const body = $("panel-body");
    body.textContent = "";
    const head = t.head === null ? 0 : t.head;
    const query = t.perQuery ? t.r[r] : t.query != null ? t.query : D.queries[0];  // (t.query: a linear: S_n)
    if (t.gx) drawGradient(t.gx[r][c], body);
    else if (!t.x || !t.x.s[r][c]) {
      body.appendChild(el("p", { class: "note" }, fill(ui("not_worked"), { count: D.explained, head: head + 1,
        query: query + 1 })));
    } else {
      const numbers = t.x.s[r][c], marks = t.x.hl[r][c];
      let any = false;
      numbers.forEach((n, k) => {
        const step = stepOf(head, query, n);
        if (!step) return;
        any = true;
        drawStep(step, marks[k], body);
        if (marks[k] === null) body.appendChild(el("p", { class: "note" }, ui("no_lines")));
      });
      if (!any) body.appendChild(el("p", { class: "note" }, ui("given")));
    }
    $("panel").hidden = false;
    document.body.classList.add("panel-open");
    const mark = body.querySelector("li.hl");
    if (mark && mark.scrollIntoView) mark.scrollIntoView({ block: "nearest" });
  }
  function close() {
    $("panel").hidden = true;
    document.body.classList.remove("panel-open");
    const was = document.querySelector("td.open");
    if (was) { was.classList.remove("open"); was.focus(); }
    opened = null;
  }

  // -- the walkthrough: explain's steps in order, for the query and head chosen
  function pathSteps() {
    return D.focus[lang][$("path-head").value + "," + $("path-query").value] || [];
  }
  function drawPath() {
    const list = pathSteps();
    pathAt = Math.min(pathAt, list.length - 1);
    const ol = $("path-steps");
    ol.textContent = "";
    list.forEach((k, n) => {
      const li = el("li");
      const b = el("button", { type: "button", title: S[D.steps[k][1]] }, D.steps[k][0].length > 2
        ? S[D.steps[k][1]].split(" · ")[0] : D.steps[k][0]);
      if (n === pathAt) b.setAttribute("aria-current", "step");
      b.addEventListener("click", () => { pathAt = n; drawPath(); });
      li.appendChild(b);
      ol.appendChild(li);
    });
    const into = $("path-step");
    into.textContent = "";
    const head = $("path-head").value;
    const keys = list.length ? D.steps[list[pathAt]][6] : [];
    let first = null;
    figures.forEach(([fig, t]) => {  // the step's tables in the page, for its head
      const inStep = keys.includes(t.key) && (t.head === null || String(t.head) === head);
      fig.classList.toggle("in-step", inStep);
      if (inStep && !first) first = fig;
    });
    if (list.length) drawStep(D.steps[list[pathAt]], null, into);
    $("goto").hidden = !first;
    goto = first;
    $("prev").disabled = pathAt <= 0;
    $("next").disabled = pathAt >= list.length - 1;
  }

  // -- the KV-cache timeline: decoding one token at a time (teach/page/decode.py)
  let decodeAt = 0;
  function drawDecode() {
    if (!D.decode) return;
    const steps = D.decode.heads[Number($("decode-head").value) || 0];
    decodeAt = Math.max(0, Math.min(decodeAt, steps.length - 1));
    const step = steps[decodeAt];
    const t = decodeAt;
    $("decode-status").textContent = fill(ui("decode_step"), {
      t: t + 1, n: D.decode.n, token: D.tokens[t], size: step.cache.length }) +
      (D.decode.window !== null && step.cache.length === D.decode.window && t + 1 > D.decode.window
        ? " " + fill(ui("decode_evicted"), { w: D.decode.window }) : "");
    const table = $("decode-cache");
    table.textContent = "";
    const head = el("tr");
    for (const k of ["decode_key", "decode_score", "decode_weight"]) head.appendChild(el("th", { scope: "col" }, ui(k)));
    table.appendChild(head);
    step.cache.forEach((j, c) => {
      const row = el("tr", { "data-j": String(j) });
      row.appendChild(el("th", { scope: "row" }, D.tokens[j] + (j === t ? " " + ui("decode_new") : "")));
      row.appendChild(el("td", {}, step.z[c]));
      row.appendChild(el("td", {}, step.a[c]));
      table.appendChild(row);
    });
    $("decode-out").textContent = fill(ui(step.same ? "decode_same" : "decode_differs"),
      { out: "[" + step.out.join(", ") + "]", t: t + 1 });
    $("decode-prev").disabled = decodeAt <= 0;
    $("decode-next").disabled = decodeAt >= steps.length - 1;
  }

  // -- language, theme, heads
  function setLang(to) {
    lang = to;
    document.documentElement.lang = to === "zh" ? "zh-CN" : "en";
    document.querySelectorAll("[data-ui]").forEach((e) => { e.textContent = ui(e.getAttribute("data-ui")); });
    $("signed-text").textContent = D.grads[lang].legend;
    $("lang").textContent = ui("switch_lang");
    $("lang").setAttribute("aria-label", ui("switch_lang_label"));
    drawTheme();
    fillHeads();
    label();
    drawPath();
    fillDecodeHeads();
    drawDecode();
    if (opened) showCell();
  }
  function fillDecodeHeads() {
    if (!D.decode) return;
    const select = $("decode-head"), was = select.value;
    select.textContent = "";
    D.decode.heads.forEach((_, h) => select.appendChild(el("option", { value: String(h) }, fill(ui("head"), { h: h + 1 }))));
    select.value = was || "0";
    $("decode-head-pick").hidden = D.decode.heads.length < 2;
  }
  function dark() {
    const set = document.documentElement.getAttribute("data-theme");
    return set ? set === "dark" : window.matchMedia("(prefers-color-scheme: dark)").matches;
  }
  function drawTheme() {
    $("theme").textContent = dark() ? ui("theme_light") : ui("theme_dark");
    $("theme").setAttribute("aria-label", ui("theme_label"));
  }
  function fillHeads() {
    for (const [id, all] of [["heads", true], ["path-head", false]]) {
      const select = $(id), was = select.value;
      select.textContent = "";
      if (all) select.appendChild(el("option", { value: "" }, ui("all_heads")));
      const heads = all ? [...Array(D.heads).keys()] : D.pathHeads;
      for (const h of heads) select.appendChild(el("option", { value: String(h) }, fill(ui("head"), { h: h + 1 })));
      select.value = was || (all ? "" : "0");
    }
    $("heads").parentElement.hidden = D.heads < 2;
    $("path-head-pick").hidden = D.pathHeads.length < 2;
  }
  function showHeads() {
    const h = $("heads").value;
    figures.forEach(([fig, t]) => { fig.hidden = h !== "" && t.head !== null && String(t.head) !== h; });
  }

  // -- start
  const main = $("tables");
  const frag = document.createDocumentFragment();
  D.tables.forEach((t, ti) => frag.appendChild(drawTable(t, ti)));
  main.appendChild(frag);
  const sw = document.querySelector(".swatches");
  for (let k = 0; k < 8; k++) {
    const i = el("i");
    const colour = heat(k === 0 ? 0 : D.low + (1 - D.low) * (k - 1) / 6);
    if (colour) i.style.background = colour;
    sw.appendChild(i);
  }
  if (!D.tables.some((t) => t.heat)) document.querySelector(".legend").hidden = true;
  const signedSw = document.querySelector("#signed-legend .swatches");
  for (let k = -6; k <= 6; k++) {
    const i = el("i");
    const colour = k === 0 ? null : signedHeat(Math.sign(k) * (D.low + (1 - D.low) * (Math.abs(k) - 1) / 5));
    if (colour) i.style.background = colour;
    signedSw.appendChild(i);
  }
  $("signed-legend").hidden = !D.tables.some((t) => t.signed);
  const pq = $("path-query");
  D.pathQueries.forEach((i) => pq.appendChild(el("option", { value: String(i) }, D.tokens[i])));
  main.addEventListener("click", (e) => { const td = e.target.closest("td[data-rc]"); if (td) { focusCell(td); open(td); } });
  main.addEventListener("keydown", onKey);
  main.addEventListener("mouseover", (e) => {
    const th = e.target.closest("th[data-t]");
    if (th) light([th.getAttribute("data-t")]);
  });
  main.addEventListener("mouseout", (e) => { if (e.target.closest("th[data-t]")) light([]); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && opened) close(); });
  $("close").addEventListener("click", close);
  $("lang").addEventListener("click", () => setLang(lang === "en" ? "zh" : "en"));
  $("theme").addEventListener("click", () => {
    document.documentElement.setAttribute("data-theme", dark() ? "light" : "dark");
    drawTheme();
  });
  $("heads").addEventListener("change", showHeads);
  $("path-query").addEventListener("change", drawPath);
  $("path-head").addEventListener("change", drawPath);
  $("goto").addEventListener("click", () => {
    if (!goto) return;
    if (goto.hidden) { $("heads").value = ""; showHeads(); }
    goto.scrollIntoView({ block: "start" });
    const cell = goto.querySelector('td[tabindex="0"]');
    if (cell) cell.focus({ preventScroll: true });
  });
  $("prev").addEventListener("click", () => { pathAt = Math.max(0, pathAt - 1); drawPath(); });
  $("next").addEventListener("click", () => { pathAt += 1; drawPath(); });
  if (D.decode) {
    $("decode").hidden = false;
    $("decode-head").addEventListener("change", drawDecode);
    $("decode-prev").addEventListener("click", () => { decodeAt -= 1; drawDecode(); });
    $("decode-next").addEventListener("click", () => { decodeAt += 1; drawDecode(); });
  }
  setLang(D.lang === "zh" ? "zh" : "en");
  document.documentElement.setAttribute("data-ready", String(Math.round(performance.now())));
})();
