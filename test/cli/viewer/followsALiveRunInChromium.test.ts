import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startViewer, type Viewer } from '../../../src/cli/viewer';
import { tapeFileName } from '../../../src/recorder/naming';
import { TapeWriter } from '../../../src/recorder/tape';
import { openChromium } from '../../support/chromium';

/**
 * A run still recording, open in the viewer: the test is the worker, appending frames to the tape one at a
 * time through the real TapeWriter, and the page must show each as it lands, without a reload; then the
 * viewer is stopped mid-run, frames are written while it is down, and a new viewer on the same port must give
 * the page (its EventSource reconnecting with Last-Event-ID) exactly the frames it missed.
 */
describe('jbx view follows a live run in headless Chromium', () => {
  let dir: string;
  let viewer: Viewer;
  let port: number;
  let writer: TapeWriter;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  const id = tapeFileName('refund-live', 'run-1').replace(/\.jbx$/, '');
  const llm = { activityId: '1', attempt: 1 };
  const tool = { activityId: '2', attempt: 1 };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'jbx-view-live-'));
    writer = await TapeWriter.open(path.join(dir, `${id}.jbx`), {
      tapeId: 'refund-live/run-1',
      createdAtMs: Date.now(),
      workflowType: 'accountingAgent',
      workflowId: 'refund-live',
      runId: 'run-1',
      taskQueue: 'jukebox',
      agentCodeHash: `blake3:${'ab'.repeat(32)}`,
    });
    await writer.append({ kind: 'activity.start', step: 0, payload: { ...llm, activityType: 'llmStep' } });
    await writer.append({
      kind: 'llm.request',
      step: 0,
      payload: { ...llm, provider: 'openai', model: 'gpt-4o-mini', params: {}, messages: [] },
    });
    viewer = await startViewer({ dir });
    port = Number(new URL(viewer.url).port);
    context = await openChromium({ width: 1280, height: 900 });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    await viewer?.close();
    await writer?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });

  const liveText = () => page.locator('section.live pre.live-text').textContent();
  const feedKinds = () =>
    page.locator('section.live ol.live-feed li.ev').evaluateAll((els) => els.map((e) => e.dataset.kind));
  const chunk = (text: string, seq: number) =>
    writer.append({ kind: 'llm.chunk', step: 0, payload: { ...llm, chunks: [[seq, seq * 30, text]] } });

  it('shows tokens, tool steps, staged effects and the approval as they are written, then the sealed outcome', async () => {
    await page.goto(`${viewer.url}#/run/${encodeURIComponent(id)}`);
    await page.waitForSelector('section.live');
    await expect.poll(() => page.locator('section.live').getAttribute('data-state')).toBe('open');
    expect(await page.locator('.runhead .badge').first().textContent()).toBe('no outcome');
    // Written before the page opened: on the timeline, not in the live feed.
    expect(await feedKinds()).toEqual([]);

    let said = '';
    for (const [seq, piece] of ['Refund of ', '$120.00 for ', 'C-1001 ', 'staged.'].entries()) {
      await chunk(piece, seq);
      said += piece;
      // Each piece is on the page before the next is written.
      await expect.poll(liveText).toBe(said);
    }
    await writer.append({
      kind: 'llm.response',
      step: 0,
      payload: {
        ...llm,
        message: {
          role: 'assistant',
          content: said,
          toolCalls: [{ id: 'c1', name: 'stage_refund', arguments: {} }],
        },
        usage: { inputTokens: 120, outputTokens: 9 },
        stopReason: 'tool_calls',
        cost: 0.0000234,
        provider: 'openai',
        model: 'gpt-4o-mini',
      },
    });
    await writer.append({ kind: 'activity.complete', step: 0, payload: { ...llm, result: null } });
    await expect.poll(feedKinds).toEqual(['response', 'step.end']);
    expect(await page.locator('li.ev.response .what').textContent()).toBe(
      'tool_calls → stage_refund · $0.000023',
    );
    // The finished step made the page read the run again: its row is on the timeline, the panel still live.
    await expect.poll(() => page.locator('ol.timeline li.row.llm').count()).toBe(1);
    expect(await page.locator('section.live').count()).toBe(1);

    await writer.append({ kind: 'activity.start', step: 1, payload: { ...tool, activityType: 'toolStep' } });
    await writer.append({
      kind: 'tool.call',
      step: 1,
      payload: { ...tool, toolName: 'stage_refund', callId: 'c1', args: { cents: 12000 } },
    });
    await writer.append({
      kind: 'fs.mutation',
      step: 1,
      payload: { ...tool, op: 'append', path: 'ledger.csv' },
    });
    await writer.append({
      kind: 'tool.result',
      step: 1,
      payload: { ...tool, callId: 'c1', output: 'staged' },
    });
    await writer.append({ kind: 'activity.complete', step: 1, payload: { ...tool, result: 'staged' } });
    await expect
      .poll(feedKinds)
      .toEqual(['response', 'step.end', 'step', 'tool.call', 'staged', 'tool.result', 'step.end']);
    expect(await page.locator('li.ev.staged .what').textContent()).toBe('fs append ledger.csv');
    expect(await page.locator('li.ev.tool-call .what').textContent()).toBe('stage_refund');
    await expect.poll(() => page.locator('ol.timeline li.row.tool').count()).toBe(1);

    await writer.append({
      kind: 'approval',
      step: 2,
      payload: { event: 'request', id: 'refund-over-limit', prompt: 'Refund $120.00?' },
    });
    await expect
      .poll(() => page.locator('li.ev.approval .what').textContent())
      .toBe('request refund-over-limit');

    await writer.seal({ status: 'completed', result: 'refunded' }, { step: 3 });
    await expect.poll(() => page.locator('section.live').getAttribute('data-state')).toBe('ended');
    // The end re-read the run: the header has its outcome and the banner the seal.
    await expect.poll(() => page.locator('.runhead .badge').first().textContent()).toBe('completed');
    expect(await page.locator('.verify').textContent()).toMatch(/Chain intact.*sealed\./);
    expect((await feedKinds()).at(-1)).toBe('outcome');
    expect(pageErrors).toEqual([]);
  });

  it('reconnects after the viewer restarts and shows only what it missed, once', async () => {
    // A second run, opened live, then the viewer goes away while the worker keeps writing.
    const other = tapeFileName('refund-live-2', 'run-1').replace(/\.jbx$/, '');
    const w = await TapeWriter.open(path.join(dir, `${other}.jbx`), {
      tapeId: 'refund-live-2/run-1',
      createdAtMs: Date.now(),
      workflowType: 'accountingAgent',
      workflowId: 'refund-live-2',
      runId: 'run-1',
      taskQueue: 'jukebox',
      agentCodeHash: `blake3:${'ab'.repeat(32)}`,
    });
    try {
      await w.append({ kind: 'activity.start', step: 0, payload: { ...llm, activityType: 'llmStep' } });
      await page.goto(`${viewer.url}#/run/${encodeURIComponent(other)}`);
      await expect.poll(() => page.locator('section.live').getAttribute('data-state')).toBe('open');
      const piece = (text: string, seq: number) =>
        w.append({ kind: 'llm.chunk', step: 0, payload: { ...llm, chunks: [[seq, seq * 30, text]] } });
      await piece('one ', 0);
      await expect.poll(liveText).toBe('one ');

      await viewer.close();
      await expect.poll(() => page.locator('section.live').getAttribute('data-state')).toBe('reconnecting');
      await piece('two ', 1);
      await piece('three', 2);
      viewer = await startViewer({ dir, port });
      await expect.poll(liveText, { timeout: 15_000 }).toBe('one two three');
      expect(await page.locator('section.live').getAttribute('data-state')).toBe('open');
      await w.seal({ status: 'completed', result: null }, { step: 1 });
      await expect.poll(() => page.locator('section.live').getAttribute('data-state')).toBe('ended');
      expect(await liveText()).toBe('one two three');
      expect(await feedKinds()).toEqual(['outcome']);
      expect(pageErrors).toEqual([]);
    } finally {
      await w.close().catch(() => {});
    }
  }, 60_000);
});
