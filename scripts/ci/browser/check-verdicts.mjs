// Opens a report.html in headless Chromium and checks its verdict table
// as a reader meets it, against the files beside the page, recomputing
// every row from them rather than trusting what the row says:
// - the first element after the verdict plots is the table, every row is
//   visible (shown, opaque, legible, its text unlike its background), and
//   every item a report must judge has its row;
// - supply excursion: the judged window with the least margin of the
//   loaded rungs (envelope.csv; a node's loaded rungs: summary.csv's
//   non-idle ones; a prediction's: its headline scenario), its figure,
//   limit and margin, how many windows are over, and the verdict;
// - supply rating: each loaded rung's mean (summary.csv; a prediction: its
//   longest envelope window) against rated_w (a node: from manifest.json),
//   the highest deciding;
// - each grid row: over the judged rungs (loaded, mitigations aside) the
//   worst verdict then the largest figure (grid.csv), its figure, limit,
//   margin, count over and verdict; a row that names no file must not hide
//   a failing figure;
// - a prediction's grid modes (modes.csv) and lifecycle limits (its JSON);
// - a prediction's [grid.system] limits (grid_response.csv: the worst of
//   the headline's windows, the simulator's or the screen's as named).
// Exit 0 when all hold; 1 with the reasons otherwise.
//   usage: node check-verdicts.mjs path/to/report.html
// VERDICT_PLOTS (comma-separated): the plots the table must follow (those
// the page has; at least one).
import { chromium } from "playwright-core";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const file = resolve(process.argv[2] ?? "");
const dir = dirname(file);
const verdictPlots = (process.env.VERDICT_PLOTS ?? "plots/verdict_swing.svg,plots/verdict_envelope.svg").split(",");
const problems = [];
const files = {};

/** A CSV file beside the page, as objects keyed by its header ([] if absent or empty). */
function read(name) {
  if (files[name]) return files[name];
  const path = join(dir, name);
  const text = existsSync(path) ? readFileSync(path, "utf8").trim() : "";
  if (!text) return (files[name] = []);
  const [cols, ...records] = parseCsv(text);
  return (files[name] = records.map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i] ?? ""]))));
}

/** RFC 4180: fields split on commas, a quoted field may hold commas, newlines and "" for a quote. */
function parseCsv(text) {
  const out = [[]];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") out[out.length - 1].push(field), (field = "");
    else if (c === "\n") out[out.length - 1].push(field), (field = ""), out.push([]);
    else if (c !== "\r") field += c;
  }
  out[out.length - 1].push(field);
  return out;
}

/** The first quantity in a cell, in base units (W, W/s, W/min, %), with half its last digit. */
function quantity(text) {
  const m = (text ?? "").replace(/−/g, "-").match(/(-?[0-9][0-9.]*)(?:\s*(?:±|–)\s*[0-9.]+)?\s*(GW|MW|kW|W|%|mHz|Hz\/s)/);
  if (!m) return null;
  const scale = { GW: 1e9, MW: 1e6, kW: 1e3, W: 1, "%": 1, mHz: 1, "Hz/s": 1 }[m[2]];
  const decimals = (m[1].split(".")[1] ?? "").length;
  return { value: Number(m[1]) * scale, half: 0.5 * scale * 10 ** -decimals };
}

/** Whether `cell` states `want` (base units) to its own rounding. */
function states(cell, want) {
  const q = quantity(cell);
  return !!q && Number.isFinite(want) && Math.abs(q.value - want) <= q.half + 1e-9 * Math.abs(want);
}

/** The margin cell's signed quantity: "−2558 W" → -2558. */
function margin(cell) {
  const q = quantity(cell.replace(/^≤\s*/, "").replace(/^\+/, ""));
  return q;
}

const WORDS = ["pass", "fail", "no limit declared", "not judged", "not measured", "undetermined", "undecided"];
/** The verdict word a cell states, exactly one of WORDS, or the cell. */
function verdictOf(cell) {
  const t = cell.replace(/[✔✘?*]/g, "").trim();
  return WORDS.find((v) => t === v || t.startsWith(v + " ") || t.startsWith(v + ":") || t.startsWith(v + " (")) ?? `unknown "${cell}"`;
}
const SEVERITY = { fail: 5, "undecided (the interval holds the limit)": 4, "undetermined (lower bound below the limit)": 3, pass: 2, "no limit declared": 1, "not measured": 0 };
const short = (v) => WORDS.find((w) => v.startsWith(w)) ?? v;

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
    const block = last ? (last.parentElement.tagName === "P" ? last.parentElement : last) : null;
    const next = block?.nextElementSibling;
    const table = next?.tagName === "TABLE" ? next : null;
    const header = table ? [...table.querySelectorAll("thead th")].map((t) => t.textContent.trim()) : [];
    const legible = (el) => {
      const s = getComputedStyle(el);
      const b = el.getBoundingClientRect();
      let bg = "rgba(0, 0, 0, 0)";
      for (let e = el; e && bg === "rgba(0, 0, 0, 0)"; e = e.parentElement) bg = getComputedStyle(e).backgroundColor;
      let opacity = 1;
      for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
      return b.height > 4 && b.width > 4 && s.visibility === "visible" && s.display !== "none" && opacity > 0.5 &&
        parseFloat(s.fontSize) >= 8 && s.color !== (bg === "rgba(0, 0, 0, 0)" ? "rgb(255, 255, 255)" : bg);
    };
    const rows = table
      ? [...table.querySelectorAll("tbody tr")].map((tr) => {
          const td = [...tr.querySelectorAll("td")];
          return {
            cells: td.map((c) => c.textContent.trim()),
            codes: td[5] ? [...td[5].querySelectorAll("code")].map((c) => c.textContent) : [],
            visible: legible(tr) && td.every(legible),
          };
        })
      : [];
    return { plots: figs.length, next: next?.tagName ?? "nothing", header, rows };
  }, verdictPlots);
} finally {
  await browser.close();
}

if (seen.plots < 1) problems.push(`none of the verdict plots ${verdictPlots.join(", ")} is in the page`);
if (seen.next !== "TABLE" || seen.header[0] !== "spec item") {
  problems.push(`the first element after the verdict plots is ${seen.next} (${seen.header.join(" | ")}), not the verdict table`);
}

// What counts: a node's loaded rungs and those its grid rows judge, or a
// prediction's headline scenario.
const summary = read("summary.csv");
const node = summary.length > 0;
const headline = read("grid.csv").find((x) => x.rung_id === "0")?.label;
const mitigations = new Set(read("mitigation.csv").map((x) => x.label));
const loaded = new Set(node ? summary.filter((x) => x.kind !== "idle").map((x) => x.label) : [headline]);
const gridJudged = new Set([...loaded].filter((l) => !mitigations.has(l)));
let rated = null;
if (node && existsSync(join(dir, "../manifest.json"))) {
  rated = JSON.parse(readFileSync(join(dir, "../manifest.json"), "utf8")).campaign_resolved?.supply?.rated_w ?? null;
}

const items = ["Supply excursion", "Supply rating", "Ramp up", "Ramp down", "Dynamic range (max", "Band share"];
for (const it of items) if (!seen.rows.some((r) => r.cells[0].startsWith(it))) problems.push(`the table has no "${it}" row`);

/** Checks one row against the worst of `candidates` (each {label, key, value, verdict, limit, margin}). */
function judge(r, what, candidates, worst, counted) {
  const [item, limit, figure, marginCell, verdict] = r.cells;
  const v = verdictOf(verdict);
  if (!worst) {
    if (r.codes.length > 0 || !["not judged", "not measured", "no limit declared"].includes(v)) problems.push(`row "${item}": nothing to judge in ${what}, yet it says "${verdict}" (${r.cells[5]})`);
    return;
  }
  const [label] = r.codes;
  const named = candidates.find((c) => c.label === label && c.key === worst.key);
  if (!named || named.verdict !== worst.verdict || named.value !== worst.value) {
    problems.push(`row "${item}": set by ${r.cells[5]}, but the worst in ${what} is ${worst.label} ${worst.key} (${worst.verdict}, ${worst.value})`);
  }
  if (v !== short(worst.verdict)) problems.push(`row "${item}": verdict "${verdict}", ${what} says "${worst.verdict}"`);
  const shown = figure.startsWith("≤") ? worst.value + (worst.pm ?? 0) : worst.value;
  if (!states(figure.replace(/^[≥≤]\s*/, ""), shown)) problems.push(`row "${item}": figure "${figure}" is not ${what}'s ${shown}`);
  if (worst.limit !== null && !states(limit, worst.limit)) problems.push(`row "${item}": limit "${limit}" is not ${worst.limit}`);
  if (worst.limit === null && !/none declared|no harmonic/.test(limit)) problems.push(`row "${item}": limit "${limit}", none is declared`);
  const m = margin(marginCell);
  if (worst.margin !== null && (!m || Math.abs(m.value - worst.margin) > m.half + 1e-9 * Math.abs(worst.margin))) {
    problems.push(`row "${item}": margin "${marginCell}" is not ${worst.margin}`);
  }
  const over = verdict.match(/\((\d+) of (\d+) (?:windows|rungs) over\)/);
  if (counted.judged > 1 && (!over || Number(over[1]) !== counted.failed || Number(over[2]) !== counted.judged)) {
    problems.push(`row "${item}": "${verdict}" does not say ${counted.failed} of ${counted.judged} over`);
  }
}
const num = (s) => (s === "" || s === undefined ? null : Number(s));
const worstOf = (c) =>
  c.reduce((a, b) => (!a || SEVERITY[b.verdict] > SEVERITY[a.verdict] || (SEVERITY[b.verdict] === SEVERITY[a.verdict] && b.value > a.value) ? b : a), null);

let checked = 0;
for (const r of seen.rows) {
  const [item, , figure, , verdict] = r.cells;
  if (!r.visible) problems.push(`row "${item}" is not legible as shown`);
  const [label, name, key] = r.codes;
  if (item.startsWith("Supply excursion")) {
    const pts = read("envelope.csv").filter((x) => loaded.has(x.label) && (x.verdict === "pass" || x.verdict === "fail"));
    const cand = pts.map((x) => ({ label: x.label, key: x.window_ms, value: num(x.max_mean_w), verdict: x.verdict, limit: num(x.limit_w), margin: num(x.margin_w) }));
    const worst = cand.reduce((a, b) => (!a || b.margin < a.margin ? b : a), null);
    if (worst) worst.verdict = cand.some((c) => c.verdict === "fail") ? "fail" : "pass";
    const w = (r.cells[5].match(/at ([0-9.]+) ms/) ?? [])[1];
    if (worst && Number(w) !== Number(worst.key)) problems.push(`row "${item}": window ${w} ms, the least margin is at ${worst.key} ms`);
    if (worst) r.codes = [label, name, worst.key];
    judge(r, "envelope.csv", cand.map((c) => ({ ...c, verdict: worst?.verdict })), worst && { ...worst }, { judged: cand.length, failed: cand.filter((c) => c.verdict === "fail").length });
  } else if (item.startsWith("Supply rating")) {
    const means = node
      ? summary.filter((x) => loaded.has(x.label) && x.mean_w !== "").map((x) => ({ label: x.label, value: num(x.mean_w) }))
      : (() => {
          const rows = read("envelope.csv").filter((x) => x.label === headline && x.max_mean_w !== "");
          const longest = Math.max(...rows.map((x) => Number(x.window_ms)));
          return rows.filter((x) => Number(x.window_ms) === longest).map((x) => ({ label: x.label, value: num(x.max_mean_w) }));
        })();
    const limitStated = quantity(r.cells[1]);
    const limit = node ? rated : limitStated ? limitStated.value : null;
    const top = means.reduce((a, b) => (!a || b.value > a.value ? b : a), null);
    const failed = limit === null ? 0 : means.filter((m) => m.value > limit).length;
    const worst = top && { ...top, key: undefined, verdict: limit === null ? "no limit declared" : failed > 0 ? "fail" : "pass", limit, margin: limit === null ? null : limit - top.value };
    judge(r, node ? "summary.csv" : "envelope.csv", means.map((m) => ({ ...m, key: undefined, verdict: worst.verdict, value: m.value })), worst, { judged: limit === null ? 0 : means.length, failed });
  } else if (name === "modes.csv") {
    const m = read("modes.csv").find((x) => x.mode === label);
    const want = !m ? "missing" : m.flagged === "true" ? "fail" : m.unresolved_above_hz !== "" ? "undecided" : "pass";
    if (verdictOf(verdict) !== want) problems.push(`row "${item}": verdict "${verdict}", modes.csv says "${want}"`);
    if (m && !states(figure, Number(m.forcing_mw) * 1e6)) problems.push(`row "${item}": figure "${figure}" is not modes.csv's ${m.forcing_mw} MW`);
  } else if (name === "grid_response.csv") {
    // A [grid.system] limit: the worst of the headline's windows from the
    // source the key names (`osc_pp_tie_mw (andes)`), bus or COI alike.
    const [, col, src] = key?.match(/^(\S+) \((\w+)\)$/) ?? [];
    const either = (a, b) => (x) => (x[a] === "" ? null : Math.max(Number(x[a]), Number(x[b])));
    const pick = {
      max_df_bus_mhz: either("max_df_bus_mhz", "max_df_coi_mhz"),
      rocof_bus_500ms_hz_per_s: either("rocof_bus_500ms_hz_per_s", "rocof_coi_500ms_hz_per_s"),
      osc_pp_bus_mhz: either("osc_pp_bus_mhz", "osc_pp_coi_mhz"),
      osc_pp_tie_mw: (x) => num(x.osc_pp_tie_mw),
    }[col];
    if (!pick) {
      problems.push(`row "${item}": grid_response.csv has no figure "${key}"`);
      continue;
    }
    const k = col === "osc_pp_tie_mw" ? 1e6 : 1;
    const vals = read("grid_response.csv").filter((x) => x.source === src && x.scenario === label).map(pick).filter((v) => v !== null && Number.isFinite(v)).map((v) => v * k);
    const lim = quantity(r.cells[1]);
    const top = Math.max(...vals);
    const failed = lim ? vals.filter((v) => v > lim.value).length : 0;
    const want = !vals.length ? "not judged" : failed > 0 ? "fail" : "pass";
    if (verdictOf(verdict) !== want) problems.push(`row "${item}": verdict "${verdict}", grid_response.csv says "${want}"`);
    if (vals.length && !states(figure, top)) problems.push(`row "${item}": figure "${figure}" is not grid_response.csv's ${top}`);
    const over = verdict.match(/\((\d+) of (\d+) windows over\)/);
    if (vals.length > 1 && (!over || Number(over[1]) !== failed || Number(over[2]) !== vals.length)) {
      problems.push(`row "${item}": "${verdict}" does not say ${failed} of ${vals.length} over`);
    }
  } else if (name?.endsWith(".json")) {
    const doc = JSON.parse(readFileSync(join(dir, name), "utf8"));
    const v = (doc.verdicts ?? []).find((x) => x.scenario === label && x.item.toLowerCase() === key.toLowerCase());
    const k = v?.unit.startsWith("MW") ? 1e6 : 1;
    const want = !v ? "missing" : v.pass === true ? "pass" : v.pass === false ? "fail" : v.limit == null ? "no limit declared" : "not judged";
    if (verdictOf(verdict) !== want) problems.push(`row "${item}": verdict "${verdict}", ${name} says "${want}"`);
    if (v && typeof v.value === "number" && !states(figure, v.value * k)) problems.push(`row "${item}": figure "${figure}" is not ${name}'s ${v.value} ${v.unit}`);
    if (v && v.limit != null && !states(r.cells[1], v.limit * k)) problems.push(`row "${item}": limit "${r.cells[1]}" is not ${name}'s ${v.limit} ${v.unit}`);
  } else {
    const metric = { "Ramp up": "ramp_up", "Ramp down": "ramp_down", "Dynamic range (max": "dynamic_range", "Dynamic range (%": "dynamic_range_pct", "Band share": "band_share" };
    const m = Object.entries(metric).find(([k]) => item.startsWith(k))?.[1];
    if (!m) {
      problems.push(`row "${item}": not an item this check knows`);
      continue;
    }
    const rows = read("grid.csv").filter((x) => gridJudged.has(x.label) && x.metric === m && x.value !== "");
    const cand = rows.map((x) => ({ label: x.label, key: m, value: num(x.value), pm: num(x.plus_minus), verdict: x.verdict, limit: num(x.limit), margin: num(x.margin) }));
    judge(r, "grid.csv", cand, worstOf(cand), { judged: cand.filter((c) => c.limit !== null).length, failed: cand.filter((c) => c.verdict === "fail").length });
  }
  checked += 1;
}
console.log(`verdict table: first after ${seen.plots} verdict plot(s): ${seen.next === "TABLE"}; ${seen.rows.length} rows, ${checked} recomputed from the files beside the page; ${problems.length} problems`);
if (problems.length) {
  for (const p of problems) console.error(`check-verdicts: ${p}`);
  process.exit(1);
}
