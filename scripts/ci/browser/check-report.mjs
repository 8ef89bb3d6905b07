// Opens a report.html in headless Chromium and checks what a reader sees:
// the two verdict plots (the node's swing against the period, and the
// excursion envelope against the supply) rendered above the answer
// block's first words, the answer block first of the sections, every plot rendered (inline SVG with a size, no
// broken image, no missing-plot marker), no script error, no request that
// leaves the file. Exit 0 when all hold; 1 with the reasons otherwise.
//   usage: node check-report.mjs path/to/report.html [min_plots]
// VERDICT_PLOTS (comma-separated) names the plots that must sit above the
// answer: a prediction's report has its waveform and envelope there.
import { chromium } from "playwright-core";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const file = resolve(process.argv[2] ?? "");
const minPlots = Number(process.argv[3] ?? 1);
const verdictPlots = (process.env.VERDICT_PLOTS ?? "plots/verdict_swing.svg,plots/verdict_envelope.svg").split(",");
const problems = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`script error: ${e.message}`));
  page.on("request", (r) => {
    if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) problems.push(`external request: ${r.url()}`);
  });
  page.on("requestfailed", (r) => problems.push(`failed request: ${r.url()}`));
  await page.goto(pathToFileURL(file).href, { waitUntil: "load" });
  const seen = await page.evaluate((verdictPlots) => {
    const h2 = [...document.querySelectorAll("h2")];
    const answer = h2.find((h) => h.textContent.startsWith("The answer"));
    const firstH2 = h2[0]?.textContent ?? "";
    const items = answer?.nextElementSibling?.tagName === "UL" ? answer.nextElementSibling.querySelectorAll("li").length : 0;
    const box = answer?.getBoundingClientRect();
    const plots = [...document.querySelectorAll("figure.plot")].map((f) => {
      const svg = f.querySelector("svg");
      const b = svg?.getBoundingClientRect();
      return { src: f.dataset.src, svg: !!svg, w: b?.width ?? 0, h: b?.height ?? 0, shapes: svg ? svg.querySelectorAll("path,rect,line,polyline,circle,text").length : 0 };
    });
    const images = [...document.images].map((i) => ({ src: i.src, ok: i.complete && i.naturalWidth > 0 }));
    const missing = [...document.querySelectorAll(".missing-plot")].map((m) => m.dataset.src);
    // The verdict plots: each must render and sit wholly above the answer
    // heading, in the page's order and on screen.
    const verdict = verdictPlots.map((src) => {
      const f = [...document.querySelectorAll("figure.plot")].find((x) => x.dataset.src === src);
      const b = f?.querySelector("svg")?.getBoundingClientRect();
      const before = !!f && !!answer && (f.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
      return { src, found: !!f, w: b?.width ?? 0, h: b?.height ?? 0, bottom: b?.bottom ?? 0, before };
    });
    return { firstH2, items, answerVisible: !!box && box.height > 0, answerTop: box?.top ?? 0, plots, images, missing, verdict };
  }, verdictPlots);
  if (!seen.firstH2.startsWith("The answer")) problems.push(`the first section is "${seen.firstH2}", not the answer block`);
  if (!seen.answerVisible || seen.items < 5) problems.push(`the answer block shows ${seen.items} items`);
  if (seen.plots.length < minPlots) problems.push(`${seen.plots.length} plots, expected at least ${minPlots}`);
  for (const p of seen.plots) {
    if (!p.svg || p.w < 50 || p.h < 50 || p.shapes < 5) problems.push(`plot ${p.src} did not render (${p.w}x${p.h}, ${p.shapes} shapes)`);
  }
  for (const v of seen.verdict) {
    if (!v.found) problems.push(`verdict plot ${v.src} is not in the page`);
    else if (v.w < 50 || v.h < 50) problems.push(`verdict plot ${v.src} did not render (${v.w}x${v.h})`);
    else if (!v.before || v.bottom > seen.answerTop) problems.push(`verdict plot ${v.src} is not above the answer (its bottom at ${v.bottom}px, the answer at ${seen.answerTop}px)`);
  }
  for (const i of seen.images) if (!i.ok) problems.push(`broken image ${i.src}`);
  for (const m of seen.missing) problems.push(`missing plot ${m}`);
  const above = seen.verdict.filter((v) => v.found && v.before && v.bottom <= seen.answerTop).length;
  console.log(`report.html: ${above} of ${verdictPlots.length} verdict plots above the answer (at ${seen.answerTop}px); answer block with ${seen.items} items; ${seen.plots.length} plots rendered inline; ${seen.images.length} images; ${problems.length} problems`);
} finally {
  await browser.close();
}
if (problems.length) {
  for (const p of problems) console.error(`check-report: ${p}`);
  process.exit(1);
}
