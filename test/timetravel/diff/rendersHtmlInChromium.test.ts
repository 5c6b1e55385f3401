import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openChromium } from '../../support/chromium';
import { runJbx } from '../replay/jbx';
import { recordRunAndFork } from './forkedTimelines';

/** Kept after the run so a person can look at it. */
const SCREENSHOT = path.join(os.tmpdir(), 'jbx-diff-page.png');

describe('jbx diff --html: one self-contained page, checked in real headless Chromium', () => {
  let recorded: Awaited<ReturnType<typeof recordRunAndFork>>;
  let page: string;

  beforeAll(async () => {
    recorded = await recordRunAndFork();
    page = path.join(recorded.setup.tapeDir, 'diff.html');
    const r = await runJbx(['diff', recorded.parent, recorded.fork, '--html', page]);
    expect(r.code).toBe(0);
  });
  afterAll(async () => {
    await recorded?.setup.close();
  });

  it('shows both timelines side by side with the first divergence highlighted, and loads nothing else', async () => {
    const html = readFileSync(page, 'utf8');
    expect(html).not.toMatch(/<script|<link|src=|url\(/i);
    const context = await openChromium({ width: 1400, height: 1000 });
    try {
      const tab = await context.newPage();
      const requests: string[] = [];
      tab.on('request', (r) => requests.push(r.url()));
      await tab.goto(`file://${page}`);
      expect(requests).toEqual([`file://${page}`]);

      const headers = await tab.locator('thead th').allTextContents();
      expect(headers[0]).toMatch(/^\s*A/);
      expect(headers[0]).toMatch(/7 steps/);
      expect(headers[2]).toMatch(/^\s*B/);
      expect(headers[2]).toMatch(/9 steps.*fork of .* at step 4/s);
      expect(await tab.locator('tbody tr.row').count()).toBe(9);

      const first = tab.locator('#first-divergence');
      expect(await first.count()).toBe(1);
      expect(await first.getAttribute('class')).toMatch(/\bchanged\b.*\bfirst\b/);
      // The first divergence is the fifth aligned row, visibly marked in red above it.
      expect(await tab.locator('tbody tr.row').nth(4).getAttribute('id')).toBe('first-divergence');
      const border = await first
        .locator('td')
        .first()
        .evaluate((td) => td.ownerDocument.defaultView!.getComputedStyle(td).borderTopColor);
      expect(border).toBe('rgb(207, 34, 46)');
      expect(await tab.locator('tr.divider').textContent()).toMatch(/first divergence/);
      // Changed fields are highlighted on both sides; the two columns sit side by side.
      expect(await first.locator('td.a .changed').count()).toBeGreaterThan(0);
      expect(await first.locator('td.b .changed').count()).toBeGreaterThan(0);
      const a = await first.locator('td.a').boundingBox();
      const b = await first.locator('td.b').boundingBox();
      expect(a && b && Math.abs(a.y - b.y) < 1 && b.x > a.x + a.width - 1).toBe(true);
      expect(await tab.locator('tr.inserted td.a.empty').count()).toBe(2);

      await first.scrollIntoViewIfNeeded();
      await tab.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(existsSync(SCREENSHOT)).toBe(true);
    } finally {
      await context.close();
    }
  });
});
