// The operator console in a real browser: Debian's Chromium, headless, driven by
// playwright-core, against a real stack (Kafka, Postgres, the processors, the simulators)
// that tests/tests/operator_console_browser.rs starts and seeds. It passes what the pages
// need in the environment; every wait is for an outcome (a row, a state, a text), bounded
// generously, never a fixed sleep.
//
//   CONSOLE_URL, ADMIN_TOKEN, VIEWER_TOKEN, CAMPAIGN, HELD_CONTACT, RULE_CONTACT,
//   MISSING_LAUNCH, OTHER_TENANT_CONTACT, SCREENSHOT_DIR

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { launchChromium } from "./chromium.mjs";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this through cargo test (operator_console_browser)`);
  return value;
};
const URL = env("CONSOLE_URL");
const ADMIN = env("ADMIN_TOKEN");
const VIEWER = env("VIEWER_TOKEN");
const CAMPAIGN = env("CAMPAIGN");
const HELD = env("HELD_CONTACT");
const RULE = env("RULE_CONTACT");
const MISSING = env("MISSING_LAUNCH");
const OTHER = env("OTHER_TENANT_CONTACT");
const SHOTS = env("SCREENSHOT_DIR");
// Outcomes arrive through Kafka, processors and projections on a loaded CI machine.
const OUTCOME = 90_000;

let browser;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
});

async function loggedIn(token) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, timezoneId: "America/Chicago" });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  await page.goto(`${URL}/console/today`);
  await page.waitForURL(/\/console\/login/);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL(/\/console\/today/);
  return { context, page };
}

async function shot(page, name) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** No page of the console ever shows another tenant's contact. */
async function assertNoOtherTenant(page) {
  const text = await page.locator("body").innerText();
  assert.ok(!text.includes(OTHER), `another tenant's contact ${OTHER} is on ${page.url()}`);
}

/** Waits for the action's outcome in the live region to say applied; on a timeout the
 * error shows what the region said, and the page is saved as a screenshot. */
async function applied(page, name) {
  try {
    await page.locator("#outcome .command[data-status='applied']").waitFor({ timeout: OUTCOME });
  } catch (e) {
    await shot(page, `failed-${name}`);
    const said = await page.locator("#outcome").innerHTML();
    throw new Error(`${name}: no applied outcome; the outcome region says: ${said || "(nothing)"}`);
  }
}

/** Opens a page and waits for its content (the region htmx fills) to load. */
async function open(page, path) {
  await page.goto(`${URL}${path}`);
  await page.locator("#page").locator("p.muted", { hasText: "Loading…" }).waitFor({ state: "detached" });
  await assertNoOtherTenant(page);
}

test("an operator logs in, sees the delivery card, recovers a missing completion, pauses and resumes a campaign, and follows a contact's timeline", async () => {
  const { context, page } = await loggedIn(ADMIN);

  // Today: the delivery card and the chart with its threshold.
  await open(page, "/console/today");
  await page.locator("#delivery-card").waitFor();
  assert.equal(await page.locator("svg.chart line[stroke-dasharray]").count(), 1, "the alert threshold is drawn");
  await page.locator("text=Missing completions").first().waitFor();
  assert.match(await page.locator("#operator-zone").innerText(), /America\/Chicago/);
  await shot(page, "today");

  // Missing completions: recover one and watch it close.
  await open(page, "/console/missing");
  const row = page.locator(`#launch-${MISSING}`);
  await row.waitFor({ timeout: OUTCOME });
  await page.getByRole("columnheader", { name: "Recovery attempts" }).waitFor();
  assert.match(await row.locator("td.attempts").innerText(), /^\d+/, "the case's recovery attempts");
  await shot(page, "missing");
  await row.getByRole("button", { name: "Recover now" }).click();
  await applied(page, "recover");
  await row.waitFor({ state: "detached", timeout: OUTCOME });

  // Exceptions: listed with their actions.
  await open(page, "/console/exceptions?status=all");
  await page.locator("table tbody tr").first().waitFor();
  await shot(page, "exceptions");

  // Pause the campaign: the contact's call is held, with the reason.
  await open(page, "/console/controls");
  await page.locator("summary", { hasText: "Pause a campaign" }).click();
  await page.getByLabel("Campaign", { exact: true }).fill(CAMPAIGN);
  const pauseForm = page.locator("form", { has: page.locator("#pause-campaign") });
  await pauseForm.getByLabel("Reason (optional)").fill("browser test: school holiday");
  await pauseForm.getByRole("button", { name: "Pause a campaign" }).click();
  await applied(page, "pause");
  await shot(page, "controls");

  await open(page, "/console/schedule?state=held");
  const heldRow = page.locator("tr", { hasText: HELD }).filter({ hasText: "held" });
  await heldRow.first().waitFor({ timeout: OUTCOME });
  assert.match(await heldRow.first().innerText(), /campaign paused/);
  await shot(page, "schedule");

  // Resume: the held call is planned again, as a new job that replaces it.
  await open(page, "/console/controls");
  await page.locator("li", { hasText: `Campaign ${CAMPAIGN} is paused` }).locator("summary", { hasText: "Resume" }).click();
  await page.locator("li", { hasText: `Campaign ${CAMPAIGN} is paused` }).getByRole("button", { name: "Resume" }).click();
  await applied(page, "resume");
  await open(page, `/console/contacts/${HELD}`);
  const replacement = page.locator("table tbody tr").filter({ has: page.locator("a[href*='#job-']") });
  await replacement.first().waitFor({ timeout: OUTCOME });
  assert.doesNotMatch(await replacement.first().locator("span.state").innerText(), /held|replaced|cancelled/);

  // The timeline: the hold is on it, and its causation link leads to the due launch it held.
  const hold = page.locator("ol.timeline li", { hasText: "JobHeld" });
  await hold.first().waitFor({ timeout: OUTCOME });
  assert.match(await hold.first().innerText(), /campaign paused/);
  const causation = hold.first().locator("a.causation");
  await causation.waitFor();
  const target = (await causation.getAttribute("href")).slice(1);
  assert.ok(await page.locator(`[id="${target}"]`).count() > 0, "the cause is on the timeline");
  await causation.click();
  await page.waitForURL(new RegExp(`#${target}$`));
  assert.ok(await page.locator(`li[id="${target}"]:target`).isVisible(), "the cause is highlighted");
  assert.match(await page.locator(`li[id="${target}"]`).innerText(), /launch_due/, "the hold's cause is the due launch");
  await shot(page, "contact");

  // A dead letter: replayed to where it came from, and the list says by whom.
  await open(page, "/console/dead-letters");
  const letter = page.locator("tr", { hasText: "c-letter" });
  await letter.first().waitFor({ timeout: OUTCOME });
  await shot(page, "dead-letters");
  await letter.first().locator("summary", { hasText: "Replay" }).click();
  await letter.first().getByRole("button", { name: "Replay" }).click();
  await applied(page, "replay");
  await page.locator("tr", { hasText: "c-letter" }).filter({ hasText: "by admin@e2e" }).first().waitFor({ timeout: OUTCOME });
  // The replayed launch request entered the contact: it has a job now.
  await open(page, "/console/contacts/c-letter");
  await page.locator("table tbody tr").first().waitFor({ timeout: OUTCOME });

  // Another tenant's contact is not found.
  await page.goto(`${URL}/console/contacts/${OTHER}`);
  await page.locator("#page .error").waitFor();
  assert.match(await page.locator("#page .error").innerText(), /not found/i);
  await context.close();
});

test("a call a state calling rule moved shows the rule's id as written, and why, on the schedule", async () => {
  const { context, page } = await loggedIn(VIEWER);
  await open(page, "/console/schedule");
  const moved = page.locator("tr", { hasText: RULE }).filter({ hasText: "state_hours:KY" });
  await moved.first().waitFor({ timeout: OUTCOME });
  const text = await moved.first().innerText();
  assert.match(text, /requested/);
  // The id as the rules file writes it (an operator looks it up there), with what it says.
  assert.doesNotMatch(text, /state hours KY/);
  assert.match(text, /10:00/, "the rule's detail says when Kentucky allows calls");
  // The job it replaced is linked.
  assert.equal(await moved.first().locator("a[href*='#job-']").count(), 1);
  await shot(page, "schedule-rule");
  await context.close();
});

test("a viewer sees no action buttons, and the API refuses a forged action", async () => {
  const { context, page } = await loggedIn(VIEWER);
  for (const path of ["/console/missing", "/console/exceptions?status=all", "/console/controls", "/console/dead-letters", `/console/contacts/${HELD}`]) {
    await open(page, path);
    // Filters stay (they are reads); no form acts.
    assert.equal(await page.locator("#page form[hx-post]").count(), 0, `no action on ${path}`);
  }
  // Forged from the page, with the viewer's own token: the API and the console refuse.
  const statuses = await page.evaluate(async ({ token, launch }) => {
    const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const api = await fetch(`/v1/launches/${launch}/recover`, { method: "POST", headers, body: "{}" });
    const form = await fetch(`/console/f/act/launches/${launch}/recover`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/x-www-form-urlencoded" },
      body: "reason=forged",
    });
    return [api.status, form.status];
  }, { token: VIEWER, launch: MISSING });
  assert.deepEqual(statuses, [403, 403]);
  await shot(page, "viewer-missing");
  await context.close();
});

test("without a token every page sends to the login, and a wrong token is refused there", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${URL}/console/schedule`);
  await page.waitForURL(/\/console\/login\?next=%2Fconsole%2Fschedule/);
  await page.getByLabel("Token").fill("cs_not-a-real-token");
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator("#login-status", { hasText: "not valid" }).waitFor();
  await shot(page, "login");
  await context.close();
});
