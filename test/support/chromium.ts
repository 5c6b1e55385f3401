/**
 * Headless Debian Chromium for the browser tests, launched as the machine needs it: without the background
 * networking flags its connections are refused by the closed network, many at a time; a fresh profile per launch
 * keeps one test's state out of the next.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function openChromium(viewport: { width: number; height: number }): Promise<BrowserContext> {
  return chromium.launchPersistentContext(mkdtempSync(path.join(os.tmpdir(), 'jbx-chromium-')), {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport,
  });
}
