// Debian's Chromium, headless, for every script here (no browser is ever downloaded).
import { chromium } from "playwright-core";

/** Launches /usr/bin/chromium (or $CHROMIUM). Without the background-networking flags
 * Chromium keeps trying hosts a closed network refuses. */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
