/**
 * `jbx view` on runs that wait for a person: headless Chromium sees the reason and the staged diff, clicks
 * Approve (the run commits) or Reject (the real ledger, table and outbox hash exactly as before). The viewer takes
 * a decision only from its own page: without its token, from another origin, or not as JSON, it refuses.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingInput, AccountingOutput } from '../../../examples/accounting/agent';
import {
  type AccountingDemo,
  fingerprint,
  readBalance,
  tablesDigest,
} from '../../../examples/accounting/demo';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { tapeFileName } from '../../../src/recorder';
import { readTape } from '../../../src/recorder/tape';
import { startAgent, waitForApproval } from '../../../src/temporal';
import { type AccountingWorld, accountingWorld } from '../../support/accountingWorld';
import { openChromium } from '../../support/chromium';

const ROOT = path.resolve(__dirname, '../../..');
const REQUEST = 'Refund $750 to customer C-2002: service outage credit, for a person to approve.';
const SHOTS = path.join(ROOT, '.jukebox/test-output/viewer');

/** The real `jbx view` in its own process, deciding as `reviewer`; resolves with its URL. */
function startJbxView(dir: string): Promise<{ child: ChildProcess; url: string; port: number }> {
  const { address, namespace } = temporalConfigFromEnv();
  const child = spawn(
    process.execPath,
    ['src/cli/bin.js', 'view', dir, '--port', '0', '--by', 'reviewer', '--json'],
    {
      cwd: ROOT,
      env: { ...process.env, JUKEBOX_TEMPORAL_ADDRESS: address, JUKEBOX_TEMPORAL_NAMESPACE: namespace },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      try {
        const j = JSON.parse(out) as { url: string; port: number };
        resolve({ child, url: j.url, port: j.port });
      } catch {
        // The JSON document is not complete yet.
      }
    });
    child.once('exit', (code) => reject(new Error(`jbx view exited ${code}: ${out}`)));
  });
}

describe('jbx view decides on a waiting run in Chromium', () => {
  let world: AccountingWorld;
  let demo: AccountingDemo;
  let env: AccountingWorld['env'];
  let view: Awaited<ReturnType<typeof startJbxView>>;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    world = await accountingWorld('view-decides');
    ({ demo, env } = world);
    view = await startJbxView(world.tapes);
    context = await openChromium({ width: 1440, height: 1000 });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    view?.child.kill('SIGTERM');
    await world?.close();
  });

  async function waitingRun() {
    const handle = await startAgent<AccountingInput, AccountingOutput>(
      'accountingAgent',
      { request: REQUEST, approval: { deciders: ['reviewer'] } },
      { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
    );
    const pending = await waitForApproval(handle);
    const id = path.basename(tapeFileName(handle.workflowId, (await handle.describe()).runId), '.jbx');
    return { handle, pending, id };
  }

  it('shows the reason and the staged diff; Approve commits the refund', async () => {
    const balance = await readBalance(demo, 'C-2002');
    const { handle, pending, id } = await waitingRun();
    await page.goto(`${view.url}#/run/${encodeURIComponent(id)}`);
    const panel = page.locator('section.approval');
    await expect.poll(() => panel.count(), { timeout: 20_000 }).toBe(1);
    expect(await panel.getAttribute('data-approval')).toBe(pending.id);
    expect(await panel.locator('p.reason').textContent()).toContain(
      'refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold',
    );
    expect(await panel.locator('.dl.add').allTextContents()).toContain(
      '+2026-12-02,C-2002,refund,75000,service outage credit',
    );
    expect(await panel.locator('pre.sql').first().textContent()).toContain(
      'UPDATE accounts SET balance_cents',
    );
    expect(await panel.locator('pre.mcp').first().textContent()).toContain('notify/notify_customer');
    await expect.poll(() => panel.locator('input.decider').inputValue()).toBe('reviewer');
    await panel.locator('textarea.note').fill('checked in the viewer');
    await page.screenshot({ path: path.join(SHOTS, 'approval-waiting.png') });
    await panel.locator('button.approve').click();
    await expect.poll(() => panel.locator('.decision-result.ok').count(), { timeout: 20_000 }).toBe(1);

    const { output } = await handle.result();
    expect(output.committed).toBe(true);
    if (!output.committed) return;
    expect(output.report.approval).toMatchObject({
      outcome: 'approved',
      by: 'reviewer',
      note: 'checked in the viewer',
    });
    expect(await readBalance(demo, 'C-2002')).toBe(balance + 75_000);
    // Who, when and the note, as the tape holds them.
    const decision = readTape(path.join(world.tapes, `${id}.jbx`))
      .frames.filter((f) => f.kind === 'approval')
      .map((f) => f.payload as { event: string; atMs: number })
      .find((p) => p.event === 'decision');
    const line = `approved ${pending.id} by reviewer at ${new Date(decision!.atMs).toISOString()} via update: checked in the viewer`;
    // The page reads the run again: no longer waiting, the decision listed.
    await expect.poll(() => page.locator('section.approval').count(), { timeout: 30_000 }).toBe(0);
    await expect
      .poll(() => page.locator(`li.decision[data-approval="${pending.id}"] .line`).textContent(), {
        timeout: 30_000,
      })
      .toBe(line);
    // And in the timeline: the request and the decision, each on its step's row.
    await expect
      .poll(() => page.locator('ol.timeline li.row .preview').allTextContents(), { timeout: 30_000 })
      .toEqual(
        expect.arrayContaining([
          expect.stringContaining(`asked ${pending.id} (commit): gate refund-approval`),
          expect.stringContaining(line),
        ]),
      );
    await page.screenshot({ path: path.join(SHOTS, 'approval-decided.png') });
    expect(pageErrors).toEqual([]);
  });

  it('Reject rolls the refund back: ledger, table and outbox byte-for-byte unchanged', async () => {
    const before = { files: await fingerprint(demo), tables: await tablesDigest(demo) };
    const { handle, id } = await waitingRun();
    await page.goto(`${view.url}#/run/${encodeURIComponent(id)}`);
    const panel = page.locator('section.approval');
    await expect.poll(() => panel.count(), { timeout: 20_000 }).toBe(1);
    // A rejection needs a reason: the run refuses one without, and the page says so.
    await panel.locator('button.reject').click();
    await expect
      .poll(() => panel.locator('.decision-result.bad').textContent(), { timeout: 20_000 })
      .toContain('a rejection needs a reason');
    await panel.locator('textarea.note').fill('no outage on record');
    await panel.locator('button.reject').click();
    await expect.poll(() => panel.locator('.decision-result.ok').count(), { timeout: 20_000 }).toBe(1);
    const { output } = await handle.result();
    expect(output.committed).toBe(false);
    expect(await fingerprint(demo)).toEqual(before.files);
    expect(await tablesDigest(demo)).toBe(before.tables);
  });

  it('takes a decision only from its own page: token, origin, JSON', async () => {
    const { handle, pending, id } = await waitingRun();
    const base = view.url.replace(/\/$/, '');
    const url = `${base}/api/runs/${encodeURIComponent(id)}/decision`;
    const config = (await (await fetch(`${base}/api/config`)).json()) as {
      token: string;
      decisions: boolean;
    };
    expect(config.decisions).toBe(true);
    expect(config.token).toMatch(/^[0-9a-f]{64}$/);
    const body = JSON.stringify({ approvalId: pending.id, verdict: 'approve', by: 'reviewer' });
    const post = (headers: Record<string, string>, data = body) =>
      fetch(url, { method: 'POST', headers, body: data }).then(async (r) => ({
        status: r.status,
        error: ((await r.json()) as { error?: string }).error,
      }));
    const json = { 'content-type': 'application/json' };
    expect(await post({ ...json, origin: base })).toMatchObject({
      status: 403,
      error: expect.stringContaining('token'),
    });
    expect(
      await post({ ...json, origin: 'http://evil.example', 'x-jukebox-token': config.token }),
    ).toMatchObject({
      status: 403,
      error: expect.stringContaining('own page'),
    });
    expect(
      await post({ ...json, origin: base, 'sec-fetch-site': 'cross-site', 'x-jukebox-token': config.token }),
    ).toMatchObject({ status: 403 });
    expect(
      await post({ 'content-type': 'text/plain', origin: base, 'x-jukebox-token': config.token }),
    ).toMatchObject({
      status: 415,
    });
    expect(
      await post(
        { ...json, origin: base, 'x-jukebox-token': config.token },
        JSON.stringify({ approvalId: 's0-9', verdict: 'approve', by: 'reviewer' }),
      ),
    ).toMatchObject({ status: 409 });
    expect(
      await post(
        { ...json, origin: base, 'x-jukebox-token': config.token },
        JSON.stringify({ approvalId: pending.id, verdict: 'approve', by: 'mallory' }),
      ),
    ).toMatchObject({ status: 403, error: expect.stringContaining('mallory may not decide') });
    // None of that reached the run: it still waits, and decides on the real request.
    expect(await post({ ...json, origin: base, 'x-jukebox-token': config.token })).toMatchObject({
      status: 200,
    });
    expect((await handle.result()).output.committed).toBe(true);
  });
});
