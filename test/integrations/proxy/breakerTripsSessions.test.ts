import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startProxy } from '../../../src/integrations/proxy';
import { readTape, verifyTape } from '../../../src/recorder/tape';
import { type ModelScript, startModelServer } from '../../../src/testing/modelserver';
import { runJbx } from '../../timetravel/replay/jbx';
import { spawnProxy } from './proxyProcess';
import { pythonVenv, runPythonTask } from './pythonVenv';

const STUCK = 'I am still working out the distance to the Moon; give me a moment to think it over.';
// Whatever is asked, the same non-answer: an agent and its model going round in circles.
const LOOP: ModelScript = { name: 'stuck', turns: [{ id: 'stuck', reply: { text: STUCK }, repeat: true }] };
// An agent that keeps calling the same tool with the same arguments (CrewAI runs it and asks again).
const TOOL_LOOP: ModelScript = {
  name: 'same-call',
  turns: [
    {
      id: 'same-call',
      reply: { toolCalls: [{ name: 'lookup_fact', arguments: { topic: 'moon distance' } }] },
      repeat: true,
    },
  ],
};

function sessionTape(dir: string, session: string) {
  const tapes = readdirSync(dir).filter((f) => f.startsWith(`${session}--`) && f.endsWith('.jbx'));
  expect(tapes).toHaveLength(1);
  return path.join(dir, tapes[0]!);
}

describe('jbx proxy guards each session with the circuit breaker', () => {
  let python: string;
  beforeAll(() => {
    python = pythonVenv();
  }, 600_000);

  it('the official openai client: the loop trips, the next request is a 429 jukebox_breaker_tripped with evidence, the trip is on the tape', async () => {
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-proxy-breaker-openai-'));
    const model = await startModelServer({ script: LOOP });
    const proxy = await spawnProxy(['--upstream', model.url, '--tape-dir', tapeDir]);
    let out: Record<string, unknown>;
    try {
      out = (await runPythonTask(python, 'openai_loop_task', `${proxy.url}/s/stuck-openai/v1`)) as Record<
        string,
        unknown
      >;
    } finally {
      expect((await proxy.stop()).code).toBe(0);
      await model.close();
    }
    // Answered once, repeated word for word once: the repeat trips it, the third request never reaches the model.
    expect(out).toMatchObject({
      answered: 2,
      status: 429,
      error: 'RateLimitError',
      code: 'jukebox_breaker_tripped',
    });
    const body = out.body as Record<string, unknown>;
    expect(body).toMatchObject({
      type: 'jukebox_breaker_tripped',
      detector: 'exact-repeat',
      session: 'stuck-openai',
    });
    expect(String(body.message)).toContain('Circuit breaker tripped on jbx proxy session "stuck-openai"');
    expect((body.evidence as { matches: { excerpt: string }[] }).matches[0]!.excerpt).toBe(STUCK);
    expect(model.requestCount()).toBe(2);

    const tape = sessionTape(tapeDir, 'stuck-openai');
    expect(verifyTape(tape)).toMatchObject({ ok: true, sealed: true });
    const frames = readTape(tape).frames;
    const trip = frames.find((f) => f.kind === 'breaker.trip')!;
    expect(trip.payload).toMatchObject({ detector: 'exact-repeat', track: 'stuck-openai' });
    expect(frames.filter((f) => f.kind === 'llm.response')).toHaveLength(2);
    expect(frames.find((f) => f.kind === 'outcome')?.payload).toMatchObject({
      status: 'failed',
      error: { code: 'BREAKER_TRIPPED' },
    });
  }, 120_000);

  it('CrewAI: the crew stops with the proxy error, nothing hangs', async () => {
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-proxy-breaker-crew-'));
    const model = await startModelServer({ script: TOOL_LOOP });
    const proxy = await spawnProxy(['--upstream', model.url, '--tape-dir', tapeDir]);
    const t0 = Date.now();
    let out: Record<string, unknown>;
    try {
      out = (await runPythonTask(python, 'crewai_loop_task', `${proxy.url}/s/stuck-crew/v1`)) as Record<
        string,
        unknown
      >;
    } finally {
      expect((await proxy.stop()).code).toBe(0);
      await model.close();
    }
    expect(out.error).toBe('RateLimitError');
    expect(String(out.message)).toContain("'code': 'jukebox_breaker_tripped'");
    expect(String(out.message)).toContain('tool-repeat');
    // max_iter is 8: the breaker stopped the crew at the third identical call, not the crew's own limit.
    expect(model.requestCount()).toBe(3);
    expect(Date.now() - t0).toBeLessThan(90_000);
    const trip = readTape(sessionTape(tapeDir, 'stuck-crew')).frames.find((f) => f.kind === 'breaker.trip');
    expect(trip?.payload).toMatchObject({ detector: 'tool-repeat', track: 'stuck-crew' });
  }, 120_000);

  it('the per-session cap trips on spend; sessions are guarded apart; a session closed and reopened starts afresh', async () => {
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-proxy-breaker-cap-'));
    const model = await startModelServer({
      script: { name: 'varied', turns: [{ id: 'long', reply: { text: 'x'.repeat(4000) }, repeat: true }] },
    });
    // gpt-4o-mini output is $0.60 per million tokens: a 4,000-character answer (about 1,000 tokens) is $0.0006.
    const proxy = await startProxy({
      upstream: model.url,
      tapeDir,
      breaker: { capUsd: 0.001, detectors: ['cost-cap'] },
    });
    const ask = (session: string) =>
      fetch(`${proxy.url}/s/${session}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Write.' }] }),
      });
    try {
      expect((await ask('a')).status).toBe(200);
      expect((await ask('a')).status).toBe(200); // $0.0012: over the cap, tripped after this answer
      const refused = await ask('a');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('x-should-retry')).toBe('false');
      const body = (await refused.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({
        code: 'jukebox_breaker_tripped',
        detector: 'cost-cap',
        capUsd: 0.001,
      });
      expect(body.error.spendUsd as number).toBeGreaterThan(0.001);
      expect((await ask('b')).status).toBe(200);
      expect(proxy.sessions().find((s) => s.session === 'a')?.breaker).toMatchObject({ tripped: true });
      await proxy.closeSession('a');
      expect((await ask('a')).status).toBe(200);
      expect(model.requestCount()).toBe(4);
    } finally {
      await proxy.close();
      await model.close();
    }
  }, 60_000);

  it('bad input: a model without a price is refused before it is forwarded; a bad cap is refused at start-up', async () => {
    const tapeDir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-proxy-breaker-bad-'));
    const model = await startModelServer({ script: LOOP });
    const proxy = await startProxy({ upstream: model.url, tapeDir });
    try {
      const r = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-imaginary', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(r.status).toBe(400);
      const body = (await r.json()) as { error: { type: string; code: string; message: string } };
      expect(body.error).toMatchObject({ type: 'jukebox_unknown_model_price', code: 'UNKNOWN_MODEL_PRICE' });
      expect(body.error.message).toContain('JUKEBOX_PRICE_TABLE');
      expect(model.requestCount()).toBe(0);
    } finally {
      await proxy.close();
      await model.close();
    }
    await expect(startProxy({ upstream: model.url, tapeDir, breaker: { capUsd: -1 } })).rejects.toThrow(
      /capUsd/,
    );
    for (const cap of ['0', '-2', 'lots', 'NaN']) {
      const r = await runJbx(['proxy', '--port', '0', `--cap-usd=${cap}`]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--cap-usd must be a positive number');
    }
  }, 60_000);
});
