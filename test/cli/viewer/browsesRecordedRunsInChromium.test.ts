import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startViewer, type Viewer } from '../../../src/cli/viewer';
import { readTape } from '../../../src/recorder/tape';
import { readTimeline } from '../../../src/timetravel/replay';
import { openChromium } from '../../support/chromium';
import { QUESTION } from '../../timetravel/replay/recordedRun';
import {
  ANSWER_CHUNK_DELAY_MS,
  damagedTapes,
  HOSTILE,
  recordEffectsRun,
  recordRunAndFork,
} from './viewerFixtures';

/** Kept after the run (git-ignored) so a person can look at the pages. */
const SHOTS = path.join(__dirname, '../../../.jukebox/test-output/viewer');
const UI = 'http://127.0.0.1:8233';

describe('jbx view in headless Chromium: list → run → step → playback → diff on real recorded tapes', () => {
  let recorded: Awaited<ReturnType<typeof recordRunAndFork>>;
  let effects: string;
  let viewer: Viewer;
  let damagedViewer: Viewer;
  let damaged: ReturnType<typeof damagedTapes>;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  const id = (file: string) => path.basename(file, '.jbx');
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    recorded = await recordRunAndFork();
    effects = await recordEffectsRun(recorded.setup.tapeDir);
    damaged = damagedTapes(recorded.parent, path.join(recorded.setup.tapeDir, 'damaged'));
    viewer = await startViewer({
      dir: recorded.setup.tapeDir,
      temporalUi: UI,
      namespace: recorded.setup.env.namespace,
    });
    damagedViewer = await startViewer({ dir: path.dirname(damaged.flipped) });
    context = await openChromium({ width: 1440, height: 1000 });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: viewer.url.replace(/\/$/, ''),
    });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
  }, 120_000);
  afterAll(async () => {
    await context?.close();
    await viewer?.close();
    await damagedViewer?.close();
    await recorded?.setup.close();
  });

  it('lists the recordings with the jbx ls filters, opens a run with its verified timeline, a step, its playback, and the fork diff', async () => {
    const parentId = id(recorded.parent);
    const forkId = id(recorded.fork);
    const timeline = readTimeline(recorded.parent);

    // 1. The recordings list, then its filters (kept in the URL).
    await page.goto(viewer.url);
    const runs = page.locator('table.runs tbody tr.run');
    await expect.poll(() => runs.count()).toBe(3);
    expect(await page.locator(`tr.run[data-id="${parentId}"] .badge`).first().textContent()).toBe(
      'completed',
    );
    expect(await page.locator(`tr.run[data-id="${id(effects)}"] .badge.tripped`).count()).toBe(1);
    await page.selectOption('#f-workflow', 'researchAgent');
    await expect.poll(() => page.evaluate('location.hash')).toContain('workflow=researchAgent');
    await expect.poll(() => runs.count()).toBe(2);
    await page.selectOption('#f-outcome', 'tripped');
    await expect.poll(() => page.locator('p.empty').count()).toBe(1);
    await page.selectOption('#f-outcome', '');
    await page.selectOption('#f-workflow', '');
    await page.selectOption('#f-sort', 'steps');
    await expect.poll(() => runs.first().getAttribute('data-id')).toBe(forkId);
    await page.fill('#f-limit', '1');
    await page.click('form.filters button[type=submit]');
    await expect.poll(() => runs.count()).toBe(1);
    await shot('01-list');

    // 2. The run: header, verification status, one timeline row per step with kind, bar, tokens, cost.
    await page.goto(viewer.url);
    await page.click(`tr.run[data-id="${parentId}"] td.id a`);
    await page.waitForSelector('ol.timeline li.row');
    expect(await page.locator('.verify').getAttribute('data-status')).toBe('intact');
    expect(await page.locator('.verify').textContent()).toMatch(
      /Chain intact.*all \d+ frames verified.*sealed/,
    );
    const stepRows = page.locator('ol.timeline li.row.llm, ol.timeline li.row.tool');
    expect(await stepRows.count()).toBe(timeline.steps.length);
    expect(await page.locator('ol.timeline li.row.llm').first().locator('.tok').textContent()).toMatch(
      /^\d+→\d+ tok$/,
    );
    const bar = await page.locator('ol.timeline li.row .bar .fill').first().boundingBox();
    expect(bar && bar.width > 0).toBe(true);
    const h = readTape(recorded.parent).header;
    expect(await page.locator('.runhead a.temporal').getAttribute('href')).toBe(
      `${UI}/namespaces/${encodeURIComponent(recorded.setup.env.namespace)}/workflows/${encodeURIComponent(h.workflowId)}/${encodeURIComponent(h.runId)}`,
    );

    // 3. A step: the final answer, its conversation as chat messages, its fork command.
    const answer = [...timeline.steps].reverse().find((s) => s.kind === 'llm')!;
    await page.click(`ol.timeline li.row[data-step="${answer.step}"] a`);
    const panel = page.locator('.step-detail');
    await expect.poll(() => panel.getAttribute('data-step')).toBe(String(answer.step));
    expect(await panel.locator('.chat .msg.user .content').first().textContent()).toBe(QUESTION);
    expect(await panel.locator('.chat .msg.tool').count()).toBe(
      timeline.steps.filter((s) => s.kind === 'tool').length,
    );
    expect(await panel.locator('.chat .msg.assistant .toolcall b').first().textContent()).toBe('lookup_fact');
    expect(await panel.locator('.msg.response .content.final').textContent()).toBe(answer.response!.text);
    const command = (await panel.locator('code.fork-command').textContent())!;
    // The tape argument is this run's file as seen from where the viewer runs, the step this row's.
    const parsed = /^jbx fork (\S+) --at (\d+)$/.exec(command);
    expect(parsed && path.resolve(parsed[1]!)).toBe(recorded.parent);
    expect(Number(parsed![2])).toBe(answer.step);
    await panel.locator('button.copy').click();
    await expect.poll(() => panel.locator('.copied').textContent()).toBe('copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(command);
    expect(await panel.locator('a.temporal').getAttribute('href')).toContain(
      `/workflows/${encodeURIComponent(h.workflowId)}/`,
    );
    await shot('02-run-step');

    // The keyboard walks the timeline.
    const at = Number(await panel.getAttribute('data-i'));
    await page.keyboard.press('k');
    await expect.poll(() => panel.getAttribute('data-i')).toBe(String(at - 1));
    await page.keyboard.press('j');
    await expect.poll(() => panel.getAttribute('data-i')).toBe(String(at));

    // 4. Stream playback at the recorded timing: 1×, pause, 4×, instant.
    const player = panel.locator('.playback');
    const total = Number(await player.getAttribute('data-total'));
    expect(total).toBe(answer.chunks.length);
    expect(total).toBeGreaterThan(5);
    const recordedSpan = Number(answer.chunks.at(-1)![1]);
    const streamText = player.locator('pre.stream-text');
    await player.locator('button[data-speed="1×"]').click();
    const t0 = Date.now();
    await player.locator('button.play').click();
    await expect
      .poll(() => player.getAttribute('data-shown').then(Number), { interval: 5 })
      .toBeGreaterThanOrEqual(2);
    await player.locator('button.pause').click();
    expect(await player.getAttribute('data-state')).toBe('paused');
    const shownAtPause = Number(await player.getAttribute('data-shown'));
    expect(shownAtPause).toBeLessThan(total);
    // At 1× a chunk cannot appear before its recorded offset.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(Number(answer.chunks[shownAtPause - 1]![1]) * 0.9);
    const partial = (await streamText.textContent())!;
    expect(answer.response!.text.startsWith(partial)).toBe(true);
    expect(partial.length).toBeLessThan(answer.response!.text.length);
    await page.waitForTimeout(ANSWER_CHUNK_DELAY_MS * 4);
    expect(Number(await player.getAttribute('data-shown'))).toBe(shownAtPause);
    await player.locator('button[data-speed="4×"]').click();
    await player.locator('button.play').click();
    await expect.poll(() => player.getAttribute('data-state')).toBe('done');
    expect(await streamText.textContent()).toBe(answer.response!.text);
    await player.locator('button[data-speed="instant"]').click();
    await player.locator('button.play').click();
    expect(await player.getAttribute('data-state')).toBe('done');
    expect(Number(await player.getAttribute('data-shown'))).toBe(total);
    expect(await streamText.textContent()).toBe(answer.response!.text);
    expect(recordedSpan).toBeGreaterThanOrEqual(ANSWER_CHUNK_DELAY_MS * (total - 1) * 0.9);
    await player.scrollIntoViewIfNeeded();
    await shot('03-playback');

    // 5. Side by side with its fork: the aligned diff of src/timetravel/diff/, first divergence highlighted.
    await page.click('.runhead a.compare-fork');
    await page.waitForSelector('table.diff tbody tr.drow');
    expect(await page.locator('table.diff thead th').first().textContent()).toMatch(/7 steps/);
    expect(await page.locator('table.diff thead th').last().textContent()).toMatch(
      /9 steps.*fork of .* at step 4/s,
    );
    expect(await page.locator('tr.drow').count()).toBe(9);
    expect(await page.locator('tr.drow').nth(4).getAttribute('id')).toBe('first-divergence');
    expect(await page.locator('tr.divider').textContent()).toMatch(/first divergence/);
    const first = page.locator('#first-divergence');
    expect(await first.locator('td.a .changed').count()).toBeGreaterThan(0);
    expect(await first.locator('td.b .changed').count()).toBeGreaterThan(0);
    const border = await first
      .locator('td')
      .first()
      .evaluate((td) => td.ownerDocument.defaultView!.getComputedStyle(td).borderTopColor);
    expect(border).toBe('rgb(207, 34, 46)');
    const [a, b] = [await first.locator('td.a').boundingBox(), await first.locator('td.b').boundingBox()];
    expect(a && b && Math.abs(a.y - b.y) < 1 && b.x > a.x + a.width - 1).toBe(true);
    expect(await page.locator('tr.inserted td.a.empty').count()).toBe(2);
    expect(await page.locator('p.verdict').textContent()).toMatch(/First divergence at row 4/);
    await shot('04-diff');
    // The fork's own page offers the way back.
    await page.click('table.diff thead th:last-child .side a');
    await page.waitForSelector('.runhead a.compare-parent');
    expect(await page.locator('.runhead dl.meta').textContent()).toMatch(/fork of.*at step 4/);
    expect(pageErrors).toEqual([]);
  });

  it('shows staged file diffs, SQL, MCP calls, commit, rollback and breaker frames, with tape text never run as markup', async () => {
    await page.goto(`${viewer.url}#/run/${id(effects)}`);
    // A hash change keeps the document: the previous test's run page stays until this run's rows replace it,
    // so wait for rows that link into this run.
    await page.waitForSelector(`ol.timeline li.row a[href^="#/run/${encodeURIComponent(id(effects))}/row/"]`);
    const marks = await page.locator('ol.timeline .marks .mark').allTextContents();
    expect(marks).toEqual(
      expect.arrayContaining([
        'fs.mutation',
        'sql.mutation',
        'mcp.call',
        'commit',
        'rollback',
        'breaker.trip',
      ]),
    );
    expect(await page.locator('ol.timeline li.row.error').count()).toBe(1);
    await page.click('ol.timeline li.row[data-step="1"] a');
    const panel = page.locator('.step-detail[data-step="1"]');
    await panel.waitFor();
    const diff = panel.locator('.effect[data-kind="fs.mutation"] .filediff');
    expect(await diff.locator('.diffhead').textContent()).toBe(
      'ledger.csv — against previous staged version',
    );
    expect(await diff.locator('.dl.add').allTextContents()).toEqual(['+ 2026-12-01,C-1001,refund 120\n']);
    expect(await diff.locator('.dl.ctx').count()).toBe(2);
    expect(await panel.locator('.effect[data-kind="sql.mutation"] pre.sql').textContent()).toBe(
      'update accounts set balance = balance + ? where id = ?',
    );
    expect(await panel.locator('.effect[data-kind="mcp.call"] .summary').textContent()).toBe(
      'notify tools/call notify_customer [escrowed]',
    );
    // The hostile strings are shown as text and nothing ran.
    expect(await panel.locator('.tool .result pre').textContent()).toBe(HOSTILE);
    expect(await panel.locator('.tool pre.args').textContent()).toContain(HOSTILE.replace(/"/g, '\\"'));
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.locator('img[src="x"], .step-detail script').count()).toBe(0);
    await shot('05-effects');
    await page.click('ol.timeline li.row[data-step="3"] a');
    await page.locator('.step-detail[data-step="3"]').waitFor();
    expect(await page.locator('.effect.rollback .summary').textContent()).toBe(
      'rollback all: refund of $750.00 exceeds the $500.00 threshold',
    );
    await page.click('ol.timeline li.row[data-step="4"] a');
    await page.locator('.step-detail[data-step="4"]').waitFor();
    expect(await page.locator('.effect.breaker-trip .summary').textContent()).toBe(
      'breaker tripped: cost-cap on refunds: track spend $0.51 passed its $0.50 cap',
    );
    expect(await page.locator('.step-detail .error-box').textContent()).toContain(
      'circuit breaker open: cost-cap',
    );
    await page.click('ol.timeline li.row[data-step="2"] a');
    await page.locator('.step-detail[data-step="2"]').waitFor();
    expect(await page.locator('.effect.commit .summary').textContent()).toBe('commit files');
    expect(pageErrors).toEqual([]);
  });

  it('shows a damaged tape with its damage (first bad frame, the frames before it) instead of a blank page', async () => {
    await page.goto(damagedViewer.url);
    const row = page.locator('tr.run[data-id="flipped"]');
    await row.waitFor();
    expect(await row.locator('.badge').first().textContent()).toBe('damaged');
    expect(await row.locator('.problem').textContent()).toContain(`frame ${damaged.frame}`);
    await row.locator('td.id a').click();
    const banner = page.locator('.verify');
    await banner.waitFor();
    expect(await banner.getAttribute('data-status')).toBe('damaged');
    expect(await banner.locator('.where').textContent()).toMatch(
      new RegExp(`frame ${damaged.frame} at byte \\d+ failed verification \\(TAPE_CORRUPT\\)`),
    );
    // A format-3 frame keeps 8 bytes of the chain, which the flipped payload byte no longer matches.
    expect(await banner.locator('.reason').textContent()).toMatch(
      /chain check mismatch \(stored [0-9a-f]{16}, expected [0-9a-f]{16}\): this frame's payload was edited/,
    );
    expect(await banner.textContent()).toContain(`Showing the ${damaged.frame} frames before the fault`);
    const rows = await page.locator('ol.timeline li.row').count();
    expect(rows).toBeGreaterThan(0);
    const lastFrame = await page.locator('ol.timeline li.row').last().getAttribute('data-i');
    expect(Number(lastFrame)).toBe(rows - 1);
    expect(await page.locator('.fault-row').textContent()).toContain(`frame ${damaged.frame}`);
    await shot('06-damaged');

    await page.goto(`${damagedViewer.url}#/run/not-a-tape`);
    await banner.waitFor();
    expect(await banner.getAttribute('data-status')).toBe('damaged');
    expect(await banner.locator('.reason').textContent()).toMatch(/not-a-tape\.jbx.*header/);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    await shot('07-not-a-tape');

    // A tape id the folder does not hold says so on the page.
    await page.goto(`${damagedViewer.url}#/run/missing`);
    await page.locator('.error-box').waitFor();
    expect(await page.locator('.error-box').textContent()).toMatch(/no tape "missing"/);
    expect(pageErrors).toEqual([]);
  });
});
