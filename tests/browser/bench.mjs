// The console's time to first render in a real browser: Debian's Chromium, headless,
// driven by playwright-core (never a downloaded browser). Run by `cargo xtask bench console`
// (bench/src/bin/console/), which serves the console over a big dataset:
//
//   node bench.mjs URL TOKEN LOADS
//
// Logs in once through /console/login, then loads each of today, schedule and exceptions
// LOADS times, timing each load from just before `page.goto` until the page's content
// region is filled (its "Loading…" placeholder gone). Prints one JSON object on stdout,
// {"today": [ms...], "schedule": [ms...], "exceptions": [ms...]}; progress goes to stderr.

import { launchChromium } from "./chromium.mjs";

const [URL, TOKEN, LOADS] = process.argv.slice(2);
const loads = Number.parseInt(LOADS ?? "", 10);
if (!URL || !TOKEN || !Number.isInteger(loads) || loads < 1) {
  console.error("usage: node bench.mjs URL TOKEN LOADS");
  process.exit(2);
}
const PAGES = ["today", "schedule", "exceptions"];

const log = (message) => console.error(`bench.mjs: ${message}`);

const browser = await launchChromium();

try {
  const context = await browser.newContext({
    viewport: { width: 1400, height: 900 },
    timezoneId: "America/Chicago",
  });
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);

  log("logging in");
  await page.goto(`${URL}/console/today`);
  await page.waitForURL(/\/console\/login/);
  await page.getByLabel("Token").fill(TOKEN);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(/\/console\/today/);

  const times = {};
  for (const name of PAGES) {
    times[name] = [];
    for (let i = 0; i < loads; i++) {
      const started = performance.now();
      await page.goto(`${URL}/console/${name}`);
      await page.locator("#page p.muted", { hasText: "Loading…" }).waitFor({ state: "detached" });
      times[name].push(performance.now() - started);
      // An error fragment also replaces the placeholder: it must not pass for a page.
      const error = await page.locator("#page p.error").count();
      if (error > 0) {
        throw new Error(`/console/${name} rendered an error: ${await page.locator("#page").innerText()}`);
      }
    }
    const sorted = [...times[name]].sort((a, b) => a - b);
    const median = sorted[Math.ceil(loads / 2) - 1];
    log(
      `${name}: ${loads} loads, min ${sorted[0].toFixed(1)} ms, median ${median.toFixed(1)} ms, ` +
        `max ${sorted[loads - 1].toFixed(1)} ms (first ${times[name][0].toFixed(1)} ms)`,
    );
  }
  await context.close();
  process.stdout.write(`${JSON.stringify(times)}\n`);
} finally {
  await browser.close();
}
