/**
 * `jbx view` on a large run: a 2,000-step tape (1,000 streamed model calls, 1,000 tool calls, a staged file
 * write every 50 steps) opened in headless Chromium, from navigation until every timeline row is in the DOM.
 * Peers measured in the same run: Chromium opening the run's plain JSON from the same server (the data alone,
 * no page), and `jbx show` printing the same tape in a terminal (a fresh process, as a person runs it).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { LlmRequest, LlmResponse } from '../../src/llm/types';
import { TapeRecorder } from '../../src/recorder';
import { NO_AGENT_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';
import { JBX_BIN } from '../paths';

const STEPS = 2_000;
const RUNS = 7;
const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A long agent run recorded through the real recorder: what a 2,000-step tape looks like on disk. */
export async function writeLongRun(dir: string, steps = STEPS): Promise<string> {
  const recorder = new TapeRecorder({ dir, fsync: 'none', agentCodeHash: 'bench' });
  const run = {
    workflowExecution: { workflowId: 'bench-viewer', runId: 'r1' },
    workflowType: 'benchAgent',
    taskQueue: 'bench',
  };
  const messages: LlmRequest['messages'] = [
    { role: 'user', content: 'Tidy the ledger, one line at a time.' },
  ];
  for (let step = 0; step < steps; step += 2) {
    // A long agent sends the task and its latest turn (a working memory, not the whole history): a 1,000-call
    // run resending its full history would cost the bench quadratic time writing the tape, not the viewer reading it.
    const window = messages.length > 3 ? [messages[0]!, ...messages.slice(-2)] : messages;
    const request: LlmRequest = {
      provider: 'openai',
      model: 'gpt-4o-mini',
      temperature: 0,
      messages: [...window],
    };
    const text = `Step ${step}: reading line ${step / 2} and fixing its format.`;
    const response: LlmResponse = {
      id: `chatcmpl-${step}`,
      provider: 'openai',
      model: 'gpt-4o-mini',
      text,
      toolCalls: [{ id: `call-${step}`, name: 'fix_line', arguments: { line: step / 2 } }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 40 + step * 6, outputTokens: 18 },
      chunks: 4,
    };
    const llm = recorder.forActivity(
      { ...run, activityId: String(step + 1), attempt: 1, activityType: 'llmStep' },
      step,
    );
    llm.start({ step, request }, []);
    await llm.llmRequest(request);
    for (let c = 0; c < 4; c++)
      llm.llmChunk({
        index: c,
        offsetMs: 120 + c * 15,
        text: text.slice(c * 12, c === 3 ? undefined : (c + 1) * 12),
        raw: {},
      });
    llm.llmResponse(response);
    await llm.complete(response);
    messages.push({ role: 'assistant', content: text, toolCalls: response.toolCalls });
    const tool = recorder.forActivity(
      { ...run, activityId: String(step + 2), attempt: 1, activityType: 'toolStep' },
      step + 1,
    );
    tool.start({ step: step + 1, name: 'fix_line', args: { line: step / 2 } }, []);
    await tool.toolCall('fix_line', { line: step / 2 });
    if (step % 50 === 0)
      tool.effect('fs.mutation', async (s) => ({
        op: 'write',
        path: 'ledger.csv',
        after: await s.putValue(new TextEncoder().encode(`line ${step / 2} fixed\n`), step + 1),
      }));
    tool.toolResult(`line ${step / 2} fixed`);
    await tool.complete(`line ${step / 2} fixed`);
    messages.push({
      role: 'tool',
      toolCallId: `call-${step}`,
      name: 'fix_line',
      content: `line ${step / 2} fixed`,
    });
  }
  const { path: file } = await recorder.recordOutcome(run, {
    step: steps,
    status: 'completed',
    result: 'done',
  });
  await recorder.close();
  return file;
}

const BIN = JBX_BIN;

/**
 * The real `jbx view` in its own process, as a person runs it: a server inside the bench process would make
 * Playwright's client wait whenever the server reads a tape, and count that as page time.
 */
function startJbxView(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, 'view', dir, '--port', '0', '--json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      out += d;
      try {
        resolve({ url: (JSON.parse(out) as { url: string }).url, child });
      } catch {}
    });
    child.stderr!.on('data', (d) => {
      err += d;
    });
    child.on('close', (code) => reject(new Error(`jbx view exited ${code}: ${err}`)));
  });
}

export const viewerSuite: BenchSuite = {
  name: 'viewer',
  breaker: NO_AGENT_NOTE,
  async run(): Promise<BenchResult[]> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-viewer-'));
    process.stderr.write(`bench viewer: recording a ${STEPS}-step run...\n`);
    const file = await writeLongRun(dir);
    process.stderr.write('bench viewer: opening it in Chromium...\n');
    const id = path.basename(file, '.jbx');
    const viewer = await startJbxView(dir);
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      let phases: number[][] = [];
      const openRun = async (cold: boolean) => {
        // A new modification time makes the server read and verify the tape again, as on a first open.
        if (cold) utimesSync(file, new Date(), new Date(Date.now() + Math.random() * 1000));
        await page.goto('about:blank');
        const t0 = performance.now();
        await page.goto(`${viewer.url}#/run/${id}`);
        // A selector, not a predicate: the page's Content-Security-Policy forbids evaluating strings in it.
        await page.waitForSelector(`ol.timeline li.row:nth-child(${STEPS})`, { state: 'attached' });
        const took = performance.now() - t0;
        // Where the time went, from the page's own clock: the run's answer (and the server's share of it), then
        // the rows built.
        phases.push(
          (await page.evaluate(`(() => {
            const r = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/api/runs/${id}'));
            const api = r?.serverTiming?.find((t) => t.name === 'api')?.duration ?? NaN;
            return [api, r ? r.responseEnd : NaN, performance.getEntriesByName('jbx:run-built')[0]?.startTime ?? NaN];
          })()`)) as number[],
        );
        // The page then lists the folder for related-run links (the catalog re-reads a changed tape): let that
        // finish outside the timing, so it does not delay the next open.
        await page.waitForLoadState('networkidle');
        return took;
      };
      const openJson = async (cold: boolean) => {
        if (cold) utimesSync(file, new Date(), new Date(Date.now() + Math.random() * 1000));
        await page.goto('about:blank');
        const t0 = performance.now();
        await page.goto(`${viewer.url}api/runs/${id}`, { waitUntil: 'load' });
        return performance.now() - t0;
      };
      const sample = async (fn: () => Promise<number>, runs = RUNS) => {
        await fn();
        const times: number[] = [];
        for (let i = 0; i < runs; i++) times.push(await fn());
        return median(times);
      };
      await page.goto(`${viewer.url}#/run/${id}`);
      await page.waitForSelector('ol.timeline li.row', { state: 'attached' });
      const rows = await page.locator('ol.timeline li.row').count();
      const phaseNote = () => {
        const m = (k: number) => median(phases.map((p) => p[k]!)).toFixed(0);
        const note = `median: server ${m(0)} ms to read and answer, run data in the page at ${m(1)} ms, rows built at ${m(2)} ms`;
        phases = [];
        return note;
      };
      const coldMs = await sample(() => openRun(true));
      const coldPhases = phaseNote();
      const warmMs = await sample(() => openRun(false));
      const warmPhases = phaseNote();
      const jsonColdMs = await sample(() => openJson(true));
      const jsonWarmMs = await sample(() => openJson(false));
      const showMs = await sample(async () => {
        const t0 = performance.now();
        const r = spawnSync(process.execPath, [BIN, 'show', file], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        if (r.status !== 0) throw new Error(`jbx show failed: ${r.stderr}`);
        return performance.now() - t0;
      }, 3);
      const note = `${STEPS}-step tape, ${rows} timeline rows rendered; target < 1,000 ms`;
      return [
        result(
          'jbx view: open a 2,000-step run in Chromium (tape read + render)',
          coldMs,
          'ms',
          'Chromium opening the run as plain JSON (tape read, no page)',
          jsonColdMs,
          `${note}; ${coldPhases}`,
        ),
        result(
          'jbx view: open a 2,000-step run in Chromium (tape read + render)',
          coldMs,
          'ms',
          'jbx show TAPE in a terminal (new process)',
          showMs,
          `${note}; ${coldPhases}`,
        ),
        result(
          'jbx view: reopen the same run (tape cached by the server)',
          warmMs,
          'ms',
          'Chromium opening the cached run as plain JSON',
          jsonWarmMs,
          `${note}; ${warmPhases}`,
        ),
      ];
    } finally {
      await browser.close();
      const stopped = new Promise((r) => viewer.child.on('close', r));
      viewer.child.kill('SIGTERM');
      await stopped;
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
