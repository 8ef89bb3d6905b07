// A screenshot of the top of a report.html as a reader first sees it
// (headless Chromium, as CI opens the reports): the verdict plots, the
// verdict table and the answer.
//   usage: node screenshot.mjs path/to/report.html out.png [height_px]
import { chromium } from "playwright-core";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [page_file, out, height] = [resolve(process.argv[2]), resolve(process.argv[3]), Number(process.argv[4] ?? 2000)];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1240, height }, deviceScaleFactor: 1 });
  await page.goto(pathToFileURL(page_file).href, { waitUntil: "load" });
  await page.screenshot({ path: out, fullPage: false });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
}
