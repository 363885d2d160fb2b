// registry report: sortable and filterable tables, charts drawn from embedded
// Vega-Lite specs. No network: everything this page needs sits beside it.
"use strict";

function cellKey(row, i) {
  const cell = row.cells[i];
  if (!cell) return "";
  return cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
}

function compareKeys(a, b) {
  const x = parseFloat(a), y = parseFloat(b);
  const numeric = a !== "" && b !== "" && !isNaN(x) && !isNaN(y) && isFinite(a) && isFinite(b);
  if (numeric) return x - y;
  return a < b ? -1 : a > b ? 1 : 0;
}

function blank(key) { return key === "" || key === "-"; }

function makeSortable(table) {
  table.querySelectorAll("thead th").forEach((th, i) => {
    th.tabIndex = 0;
    th.title = "sort";
    const sort = () => {
      const down = th.getAttribute("aria-sort") === "ascending";
      table.querySelectorAll("thead th").forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows).map(r => [cellKey(r, i), r]);
      // blanks last in either direction (docs/report.md): a record without the figure
      // never heads a ranking of it
      rows.sort((p, q) => blank(p[0]) || blank(q[0]) ? blank(p[0]) - blank(q[0])
                          : (down ? -1 : 1) * compareKeys(p[0], q[0]));
      const frag = document.createDocumentFragment();
      rows.forEach(p => frag.appendChild(p[1]));
      body.appendChild(frag);
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", e => { if (e.key === "Enter") sort(); });
  });
}

function makeFilter(input) {
  const table = document.getElementById(input.dataset.filters);
  const count = document.getElementById(input.dataset.count);
  const texts = Array.from(table.tBodies[0].rows).map(r => [r, r.textContent.toLowerCase()]);
  input.addEventListener("input", () => {
    const terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    texts.forEach(([row, text]) => {
      const ok = terms.every(t => text.includes(t));
      row.hidden = !ok;
      shown += ok;
    });
    if (count) count.textContent = shown;
  });
}

function drawCharts() {
  const figures = Array.from(document.querySelectorAll("figure.chart"));
  if (!figures.length) { document.body.dataset.charts = "none"; return; }
  if (typeof vegaEmbed !== "function") {
    document.body.dataset.charts = "error";
    console.error("report: the chart library (assets/vega.js) did not load");
    return;
  }
  const drawn = figures.map(fig => {
    const spec = JSON.parse(document.getElementById("spec-" + fig.dataset.chart).textContent);
    // ast + the bundled interpreter: no eval, so the page's CSP needs no 'unsafe-eval';
    // no injected <style>: the stylesheet beside the page has what the charts need
    return vegaEmbed(fig, spec, {renderer: "svg", actions: false, ast: true,
                                 defaultStyle: false, tooltip: {disableDefaultStyle: true}});
  });
  Promise.all(drawn).then(
    () => { document.body.dataset.charts = "drawn"; },
    err => { document.body.dataset.charts = "error"; console.error("report: " + err); });
}

// The index: choose records (their checkboxes) and lay them out side by side, from the
// data the page carries (no request: the CSP allows none). Text only, never markup.
function makePicker(button) {
  const data = JSON.parse(document.getElementById("records-data").textContent);
  const boxes = Array.from(document.querySelectorAll("input.pick"));
  const update = () => {
    const n = boxes.filter(b => b.checked).length;
    button.disabled = n < 2;
    button.textContent = n < 2 ? "choose two or more records to compare"
                               : "compare the " + n + " chosen records";
  };
  boxes.forEach(b => b.addEventListener("change", update));
  update();
  button.addEventListener("click", () => {
    const chosen = boxes.filter(b => b.checked).map(b => data[b.value]).filter(Boolean);
    const names = [];
    chosen.forEach(r => Object.keys(r.facts).forEach(k => {
      if (!names.includes(k)) names.push(k);
    }));
    const table = document.createElement("table");
    table.id = "side-by-side";
    const head = table.createTHead().insertRow();
    head.appendChild(document.createElement("th")).textContent = "";
    chosen.forEach(r => {
      const th = head.appendChild(document.createElement("th"));
      const a = th.appendChild(document.createElement("a"));
      a.href = r.href;
      a.textContent = r.facts.id;
    });
    const body = table.createTBody();
    names.filter(k => k !== "id").forEach(k => {
      const values = chosen.map(r => r.facts[k] === undefined ? "" : r.facts[k]);
      const row = body.insertRow();
      if (new Set(values).size > 1) row.className = "differs";
      row.insertCell().textContent = k;
      values.forEach(v => { row.insertCell().textContent = v; });
    });
    const holder = document.getElementById("picked-table");
    holder.replaceChildren(table);
    document.getElementById("picked").hidden = false;
    document.getElementById("picked").scrollIntoView();
  });
}

document.querySelectorAll("table.sortable").forEach(makeSortable);
document.querySelectorAll("input[data-filters]").forEach(makeFilter);
const pickButton = document.getElementById("compare-picked");
if (pickButton) makePicker(pickButton);
drawCharts();
