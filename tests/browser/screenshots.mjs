// Screenshots of a running console, for the README and for a look after a demo:
//   node screenshots.mjs <console base URL> <token> <output dir> [zone] [day of Today]
// e.g. after `cargo xtask demo --keep-running`, with the URL, token and day it prints.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { launchChromium } from "./chromium.mjs";

const [url, token, out, zone = "America/Chicago", day] = process.argv.slice(2);
if (!url || !token || !out) {
  console.error("usage: node screenshots.mjs <console base URL> <token> <output dir> [time zone]");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const browser = await launchChromium();
try {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: zone })).newPage();
  await page.goto(`${url}/console/login`);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(/\/console\/today/);
  for (const name of ["today", "missing", "exceptions", "schedule", "controls"]) {
    const query = name === "today" && day ? `?day=${day}` : "";
    await page.goto(`${url}/console/${name}${query}`);
    await page.locator("#page p.muted", { hasText: "Loading…" }).waitFor({ state: "detached" });
    const file = join(out, `console-${name}.png`);
    await page.screenshot({ path: file, fullPage: false });
    console.log(file);
  }
} finally {
  await browser.close();
}
