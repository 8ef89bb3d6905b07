// Opens a report.html in headless Chromium and checks its verdict table
// as a reader meets it: the first element after the verdict plots is the
// table (spec item | limit | figure | margin | verdict | set by), and every
// row agrees with the file it names: the figure is that row's value in
// envelope.csv or grid.csv (beside the page), the verdict is its verdict
// (a rating row: the figure against the limit the row states), a count of
// rungs over is no more than the file's failing rows of that metric, and a
// supply excursion that passes has no failing window in envelope.csv.
// Exit 0 when all hold; 1 with the reasons otherwise.
//   usage: node check-verdicts.mjs path/to/report.html
// VERDICT_PLOTS (comma-separated): the plots the table must follow.
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const file = resolve(process.argv[2] ?? "");
const verdictPlots = (process.env.VERDICT_PLOTS ?? "plots/verdict_swing.svg,plots/verdict_envelope.svg").split(",");
const problems = [];

const files = {};
const read = (name) => (files[name] ??= csv(name));

/** A CSV file beside the page, as objects keyed by its header. */
function csv(name) {
  const [head, ...lines] = readFileSync(join(dirname(file), name), "utf8").trim().split("\n");
  const cols = head.split(",");
  return lines.map((l) => {
    // No cell of envelope.csv or grid.csv that this reads holds a comma
    // inside quotes before it; the reason column, last, may.
    const cells = l.split(",");
    return Object.fromEntries(cols.map((c, i) => [c, cells[i] ?? ""]));
  });
}

/** The first quantity in a cell, in base units (W, W/s, %): "7.3 kW" → 7300. */
function quantity(text) {
  // "v ± pm unit" and "lo–hi unit" name the unit once, after the last number.
  const m = text.replace(/−/g, "-").match(/(-?[0-9][0-9.]*)(?:\s*(?:±|–)\s*[0-9.]+)?\s*(GW|MW|kW|W|%)(\/s)?/);
  if (!m) return null;
  const scale = { GW: 1e9, MW: 1e6, kW: 1e3, W: 1, "%": 1 }[m[2]];
  const decimals = (m[1].split(".")[1] ?? "").length;
  return { value: Number(m[1]) * scale, half_step: 0.5 * scale * 10 ** -decimals };
}

/** The verdict word a cell states, as the CSVs spell it. */
function verdictOf(cell) {
  const t = cell.replace(/[✔✘?*]/g, "").trim();
  for (const v of ["pass", "fail", "no limit declared", "not judged", "not measured", "undetermined", "undecided"]) {
    if (t.startsWith(v)) return v;
  }
  return t;
}

/** A grid mode's forcing in W and its verdict, as modes.csv states them. */
function modeRow(mode) {
  const m = read("modes.csv").find((x) => x.mode === mode);
  if (!m) return [undefined];
  const want = m.flagged === "true" ? "fail" : m.unresolved_above_hz !== "" ? "undecided" : "pass";
  return [Number(m.forcing_mw) * 1e6, want];
}

/** A lifecycle limit's figure in base units and its verdict, as the JSON states them. */
function lifecycleRow(name, scenario, item) {
  const doc = JSON.parse(readFileSync(join(dirname(file), name), "utf8"));
  const v = (doc.verdicts ?? []).find((x) => x.scenario === scenario && x.item.toLowerCase() === item.toLowerCase());
  if (!v) return [undefined];
  const k = v.unit.startsWith("MW") ? 1e6 : 1;
  const want = v.pass === true ? "pass" : v.pass === false ? "fail" : v.limit == null ? "no limit declared" : "not judged";
  return [typeof v.value === "number" ? v.value * k : null, want];
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
let seen;
try {
  const page = await browser.newPage();
  await page.goto(pathToFileURL(file).href, { waitUntil: "load" });
  seen = await page.evaluate((verdictPlots) => {
    const figs = [...document.querySelectorAll("figure.plot")].filter((f) => verdictPlots.includes(f.dataset.src));
    const last = figs[figs.length - 1];
    // A figure sits in its own paragraph: the element after that paragraph.
    const block = last ? (last.parentElement.tagName === "P" ? last.parentElement : last) : null;
    const next = block?.nextElementSibling;
    const table = next?.tagName === "TABLE" ? next : null;
    const header = table ? [...table.querySelectorAll("thead th")].map((t) => t.textContent.trim()) : [];
    const rows = table
      ? [...table.querySelectorAll("tbody tr")].map((tr) => {
          const td = [...tr.querySelectorAll("td")];
          return {
            cells: td.map((c) => c.textContent.trim()),
            codes: td[5] ? [...td[5].querySelectorAll("code")].map((c) => c.textContent) : [],
            visible: tr.getBoundingClientRect().height > 0,
          };
        })
      : [];
    return { plots: figs.length, next: next?.tagName ?? "nothing", header, rows };
  }, verdictPlots);
} finally {
  await browser.close();
}

if (seen.plots !== verdictPlots.length) problems.push(`${seen.plots} of ${verdictPlots.length} verdict plots in the page`);
if (seen.next !== "TABLE" || seen.header[0] !== "spec item") {
  problems.push(`the first element after the verdict plots is ${seen.next} (${seen.header.join(" | ")}), not the verdict table`);
}
let agreed = 0;
for (const r of seen.rows) {
  const [item, limit, figure, , verdict] = r.cells;
  if (!r.visible) problems.push(`row "${item}" is not visible`);
  if (r.codes.length < 2) {
    if (!/not measured|not judged|no limit declared/.test(verdict)) problems.push(`row "${item}" names no file row: ${r.cells[5]}`);
    continue;
  }
  const [label, name, metric] = r.codes;
  const window = (r.cells[5].match(/at ([0-9.]+) ms/) ?? [])[1];
  if (name === "modes.csv" || name.endsWith(".json")) {
    // A prediction's grid mode (modes.csv) or lifecycle limit (its JSON).
    const [value, want] = name.endsWith(".json") ? lifecycleRow(name, label, metric) : modeRow(label);
    if (value === undefined) {
      problems.push(`row "${item}": ${name} has no row ${label} ${metric}`);
      continue;
    }
    const stated = quantity(figure);
    if (value !== null && (!stated || Math.abs(stated.value - value) > stated.half_step + 1e-9 * Math.abs(value))) {
      problems.push(`row "${item}": figure "${figure}" is not ${name}'s ${value}`);
    }
    if (verdictOf(verdict) !== want) problems.push(`row "${item}": verdict "${verdict}", ${name} says "${want}"`);
    agreed += 1;
    continue;
  }
  const rows = read(name);
  const match = rows.find((x) => x.label === label && (window ? Number(x.window_ms) === Number(window) : x.metric === metric));
  if (!match) {
    problems.push(`row "${item}": ${name} has no row ${label} ${window ? `at ${window} ms` : metric}`);
    continue;
  }
  const stated = quantity(figure.replace(/^≥\s*/, ""));
  const csvValue = Number(window ? match.max_mean_w : match.value);
  if (!stated || Math.abs(stated.value - csvValue) > stated.half_step + 1e-9 * Math.abs(csvValue)) {
    problems.push(`row "${item}": figure "${figure}" is not ${name}'s ${csvValue}`);
  }
  const v = verdictOf(verdict);
  if (item.startsWith("Supply rating")) {
    const l = quantity(limit);
    const want = l ? (csvValue > l.value ? "fail" : "pass") : "no limit declared";
    if (v !== want) problems.push(`row "${item}": verdict "${verdict}", yet ${csvValue} against the limit "${limit}" is ${want}`);
  } else {
    const want = match.verdict === "" ? "not judged" : match.verdict;
    if (!want.startsWith(v)) problems.push(`row "${item}": verdict "${verdict}", ${name} says "${match.verdict}"`);
  }
  if (item.startsWith("Supply excursion") && v === "pass" && rows.some((x) => x.verdict === "fail")) {
    problems.push(`row "${item}" passes, yet envelope.csv has failing windows`);
  }
  const over = verdict.match(/\((\d+) of (\d+) rungs over\)/);
  if (over && metric) {
    const failing = rows.filter((x) => x.metric === metric && x.verdict === "fail").length;
    if (Number(over[1]) > failing) problems.push(`row "${item}": ${over[1]} rungs over, ${name} has ${failing} failing`);
  }
  agreed += 1;
}
if (seen.rows.length < 3) problems.push(`the verdict table has ${seen.rows.length} rows`);
console.log(`verdict table: first after ${seen.plots} verdict plots: ${seen.next === "TABLE"}; ${seen.rows.length} rows, ${agreed} checked against the CSVs; ${problems.length} problems`);
if (problems.length) {
  for (const p of problems) console.error(`check-verdicts: ${p}`);
  process.exit(1);
}
