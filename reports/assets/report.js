// Filtering, drill-down and shareable filter state (in the URL fragment) for the conformance report.
// Runs offline: everything it reads is in the page, in #report-data.
"use strict";

const DATA = JSON.parse(document.getElementById("report-data").textContent);
const OUTCOMES = Object.fromEntries(DATA.outcomes.map((o) => [o.key, o]));

function escapeHtml(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function formatNumber(value) {
  if (value === null || value === undefined) return "–";
  if (value === 0) return "0";
  return Math.abs(value) >= 0.01 && Math.abs(value) < 1000 ? value.toPrecision(3) : value.toExponential(2);
}

function badge(outcomeKey) {
  const outcome = OUTCOMES[outcomeKey] || { label: outcomeKey };
  return `<span class="badge o-${escapeHtml(outcomeKey)}">${escapeHtml(outcome.label)}</span>`;
}

// ---- Filters: each filterable table has a toolbar whose controls carry data-filter="<name>".

const FILTERS = {
  matrix: {
    rows: () => document.querySelectorAll("#matrix-table tbody tr"),
    matches(row, state) {
      if (state.q && !row.dataset.op.toLowerCase().includes(state.q.toLowerCase())) return false;
      if (state.family && row.dataset.family !== state.family) return false;
      if (state.failing === "1" && row.dataset.failing !== "1") return false;
      if (state.outcome && !row.dataset.outcomes.split(" ").includes(state.outcome)) return false;
      return true;
    },
  },
  models: {
    rows: () => document.querySelectorAll("#models-table tbody tr[data-name]"),
    matches(row, state) {
      if (state.q && !row.dataset.name.toLowerCase().includes(state.q.toLowerCase())) return false;
      for (const key of ["kind", "opset", "mode", "provider", "capture", "bucket"]) {
        if (state[key] && row.dataset[key] !== state[key]) return false;
      }
      return true;
    },
  },
  coverage: {
    rows: () => document.querySelectorAll("#coverage-table tbody tr"),
    matches(row, state) {
      if (state.q && !row.dataset.op.toLowerCase().includes(state.q.toLowerCase())) return false;
      if (state.missing === "1" && row.dataset.missing !== "1") return false;
      return true;
    },
  },
};

function controls(table) {
  return document.querySelectorAll(`[data-table="${table}"][data-filter]`);
}

function readState(table) {
  const state = {};
  for (const control of controls(table)) {
    const value = control.type === "checkbox" ? (control.checked ? "1" : "") : control.value.trim();
    if (value) state[control.dataset.filter] = value;
  }
  return state;
}

function applyFilter(table) {
  const state = readState(table);
  let shown = 0;
  let total = 0;
  for (const row of FILTERS[table].rows()) {
    const visible = FILTERS[table].matches(row, state);
    row.hidden = !visible;
    const next = row.nextElementSibling;
    if (next && next.classList.contains("detail")) next.hidden = !visible;  // a failure's error row goes with it
    total += 1;
    if (visible) shown += 1;
  }
  const counter = document.querySelector(`[data-shown="${table}"]`);
  if (counter) counter.textContent = `Showing ${shown} of ${total}`;
}

function writeHash() {
  const params = new URLSearchParams();
  for (const table of Object.keys(FILTERS)) {
    for (const [key, value] of Object.entries(readState(table))) params.set(`${table}.${key}`, value);
  }
  const text = params.toString();
  history.replaceState(null, "", text ? `#${text}` : location.pathname + location.search);
}

function readHash() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  for (const [name, value] of params) {
    const [table, key] = name.split(".");
    if (!key) continue;
    const control = document.querySelector(`[data-table="${table}"][data-filter="${key}"]`);
    if (!control) continue;
    if (control.type === "checkbox") control.checked = value === "1";
    else control.value = value;
  }
}

// ---- Drill-down panel.

function caseRowsTable(positions) {
  if (!positions.length) return '<p class="empty">No result rows.</p>';
  const body = positions.map((p) => {
    const c = DATA.cases[p];
    const tolerance = c.rtol === null && c.atol === null ? "–" : `${formatNumber(c.rtol)} / ${formatNumber(c.atol)}`;
    const main = `<tr><td>${escapeHtml(c.name)}</td><td>${escapeHtml(c.mode)}</td><td>${escapeHtml(c.capture)}</td><td>${escapeHtml(c.dtypes.join(", ") || "–")}</td>
      <td>${escapeHtml(c.provider)}</td><td>${badge(c.outcome)}</td><td>${escapeHtml(c.stage || "–")}</td>
      <td class="num">${formatNumber(c.max_abs_error)}</td><td class="num">${formatNumber(c.max_rel_error)}</td>
      <td class="num">${tolerance}</td></tr>`;
    const detail = [c.error, c.reason].filter(Boolean).join("\n");
    const links = [
      c.rerun && c.bucket === "failed" ? `<div><code>${escapeHtml(c.rerun)}</code> <button class="copy" data-copy="${escapeHtml(c.rerun)}">copy</button></div>` : "",
      c.repro_href && c.bucket === "failed" ? `<div><a href="${escapeHtml(c.repro_href)}">repro bundle</a></div>` : "",
    ].join("");
    if (!detail && !links) return main;
    return main + `<tr class="detail"><td colspan="10">${detail ? `<pre class="${c.bucket === "failed" ? "err" : "note"}">${escapeHtml(detail)}</pre>` : ""}${links}</td></tr>`;
  }).join("");
  return `<div class="scroll-x"><table class="cases"><thead><tr><th>Sample</th><th>Mode</th><th>Capture</th><th>Dtypes</th><th>Provider</th><th>Outcome</th>
    <th>Stage</th><th class="num">Max abs</th><th class="num">Max rel</th><th class="num">rtol / atol</th></tr></thead><tbody>${body}</tbody></table></div>`;
}

function showOpCell(opIndex, opset) {
  const entry = DATA.matrix[opIndex];
  const cell = entry.cells[opset];
  const grid = cell.grid.map((g) => `<tr><td>${escapeHtml(g.dtype)}</td><td>${escapeHtml(g.provider)}</td><td>${badge(g.outcome)}</td>
    <td class="num">${g.passed}/${g.total}</td></tr>`).join("");
  openPanel(`${entry.op} at opset ${opset}`, `
    <p>${badge(cell.outcome)}</p>
    <dl class="facts">
      <div><dt>Samples</dt><dd>${cell.samples}</dd></div>
      <div><dt>Results</dt><dd>${cell.passed}/${cell.total} passed</dd></div>
      <div><dt>Failure stage</dt><dd>${escapeHtml(cell.stage || "–")}</dd></div>
      <div><dt>Max abs error</dt><dd>${formatNumber(cell.max_abs_error)}</dd></div>
      <div><dt>Max rel error</dt><dd>${formatNumber(cell.max_rel_error)}</dd></div>
    </dl>
    <h3>Dtype × provider</h3>
    <table class="grid"><thead><tr><th>Dtypes</th><th>Provider</th><th>Outcome</th><th class="num">Passed</th></tr></thead><tbody>${grid}</tbody></table>
    <h3>Result rows</h3>${caseRowsTable(cell.rows)}`);
}

function showModelCell(modelIndex, opset) {
  const entry = DATA.models[modelIndex];
  const cell = entry.cells[opset];
  openPanel(`${entry.name} (${entry.capture}) at opset ${opset}`, `<p>${badge(cell.outcome)}</p><h3>Result rows</h3>${caseRowsTable(cell.rows)}`);
}

function openPanel(title, html) {
  const panel = document.getElementById("drilldown");
  panel.querySelector("h2").textContent = title;
  panel.querySelector(".body").innerHTML = html;
  panel.hidden = false;
  panel.querySelector(".close").focus();
}

function closePanel() {
  document.getElementById("drilldown").hidden = true;
}

// ---- Wiring.

document.addEventListener("click", (event) => {
  const cell = event.target.closest("button.cell");
  if (cell && cell.dataset.rows !== "0") {
    if (cell.dataset.op !== undefined) showOpCell(Number(cell.dataset.op), cell.dataset.opset);
    else if (cell.dataset.model !== undefined) showModelCell(Number(cell.dataset.model), cell.dataset.opset);
    return;
  }
  const copy = event.target.closest("button.copy");
  if (copy && navigator.clipboard) {
    navigator.clipboard.writeText(copy.dataset.copy).then(() => { copy.textContent = "copied"; }, () => {});
    return;
  }
  if (event.target.closest("#drilldown .close")) closePanel();
});
document.addEventListener("keydown", (event) => { if (event.key === "Escape") closePanel(); });

readHash();
for (const table of Object.keys(FILTERS)) {
  for (const control of controls(table)) {
    control.addEventListener("input", () => { applyFilter(table); writeHash(); });
    control.addEventListener("change", () => { applyFilter(table); writeHash(); });
  }
  applyFilter(table);
}
window.addEventListener("hashchange", () => { readHash(); for (const table of Object.keys(FILTERS)) applyFilter(table); });
document.body.dataset.ready = "1";
