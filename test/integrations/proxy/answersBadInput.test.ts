import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProxy } from '../../../src/integrations/proxy';
import { readTape } from '../../../src/recorder/tape';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { runJbx } from './proxyProcess';

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'jukebox-proxy-bad-'));
const client = (baseURL: string) =>
  new OpenAI({ baseURL, apiKey: 'sk-test', maxRetries: 0, timeout: 10_000 });
const ask = (content: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content }] });

/** A port nothing listens on: one that was just free. */
async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('jbx proxy answers bad input with a clear JSON error, never a hang', () => {
  let model: ModelServer;
  beforeAll(async () => {
    model = await startModelServer({
      script: { turns: [{ reply: { text: 'Recorded answer.' }, repeat: true }] },
    });
  });
  afterAll(() => model.close());

  it('an upstream that is down: 502 naming the upstream and what to do', async () => {
    const upstream = `http://127.0.0.1:${await closedPort()}`;
    const proxy = await startProxy({ upstream, tapeDir: tmp() });
    try {
      const started = Date.now();
      const err = (await client(`${proxy.url}/v1`)
        .chat.completions.create(ask('hello'))
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(err).toBeInstanceOf(OpenAI.InternalServerError);
      expect(err.status).toBe(502);
      expect(err.message).toContain(`could not reach the upstream ${upstream}`);
      expect(err.message).toContain('--upstream');
      expect((err.error as { code?: string }).code).toBe('PROXY_UPSTREAM_UNREACHABLE');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await proxy.close();
    }
  });

  it('a malformed SSE stream from the upstream: the client gets an error event, the tape marks the call unanswered', async () => {
    const bad = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n',
      );
      res.end('data: {this is not json\n\n');
    });
    await new Promise<void>((r) => bad.listen(0, '127.0.0.1', () => r()));
    const upstream = `http://127.0.0.1:${(bad.address() as AddressInfo).port}`;
    const tapeDir = tmp();
    const proxy = await startProxy({ upstream, tapeDir });
    try {
      const stream = await client(`${proxy.url}/v1`).chat.completions.create({
        ...ask('hello'),
        stream: true,
      });
      const texts: string[] = [];
      const err = await (async () => {
        for await (const c of stream) texts.push(c.choices[0]?.delta.content ?? '');
      })().catch((e: unknown) => e);
      expect(texts).toEqual(['Hi']);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as Error).message).toContain('is malformed');
      expect((err as Error).message).toContain('is not JSON');
      const tape = proxy.sessions()[0]?.tape as string;
      await proxy.close();
      const response = readTape(tape).frames.find((f) => f.kind === 'llm.response')?.payload as {
        error?: { code: string };
      };
      expect(response.error?.code).toBe('INTEGRATION_MALFORMED_SSE');
    } finally {
      await proxy.close();
      await new Promise<void>((r) => bad.close(() => r()));
    }
  });

  it('a request the replay tape has no answer for: 400 naming the tape and the unmatched request', async () => {
    const recorder = await startProxy({ upstream: model.url, tapeDir: tmp() });
    await client(`${recorder.url}/v1`).chat.completions.create(ask('the question that was recorded'));
    const tape = recorder.sessions()[0]?.tape as string;
    await recorder.close();

    const replayer = await startProxy({ replay: tape });
    try {
      const res = await fetch(`${replayer.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ask('a question never recorded')),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string; tape: string } };
      expect(body.error.code).toBe('REPLAY_UNMATCHED');
      expect(body.error.tape).toBe(tape);
      expect(body.error.message).toContain('a question never recorded');
      expect(body.error.message).toContain('the question that was recorded');
      // The recorded question is still answered, once; asking it again is unmatched too.
      const ok = await client(`${replayer.url}/v1`).chat.completions.create(
        ask('the question that was recorded'),
      );
      expect(ok.choices[0]?.message.content).toBe('Recorded answer.');
      const again = await client(`${replayer.url}/v1`)
        .chat.completions.create(ask('the question that was recorded'))
        .catch((e: unknown) => e);
      expect((again as Error).message).toContain('already served');
    } finally {
      await replayer.close();
    }
  });

  it('a body that is not JSON: 400 saying so', async () => {
    const proxy = await startProxy({ upstream: model.url, tapeDir: tmp() });
    try {
      const res = await fetch(`${proxy.url}/v1/chat/completions`, { method: 'POST', body: '{nope' });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('INTEGRATION_BAD_REQUEST');
      expect(body.error.message).toContain('not valid JSON');
    } finally {
      await proxy.close();
    }
  });

  it('the CLI: usage errors exit 2, a replay file that is not a tape exits 3', async () => {
    const port = await runJbx(['proxy', '--port', 'eighty']);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('--port must be an integer');
    const missing = await runJbx(['proxy', '--replay', '/nonexistent/run.jbx']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such tape: /nonexistent/run.jbx');
    const both = await runJbx(['proxy', '--replay', '/etc/hostname', '--upstream', 'http://127.0.0.1:1']);
    expect(both.code).toBe(2);
    const notTape = path.join(tmp(), 'notes.jbx');
    writeFileSync(notTape, 'just some text, not a tape');
    const damaged = await runJbx(['proxy', '--replay', notTape]);
    expect(damaged.code).toBe(3);
    expect(damaged.stderr).toContain(`Cannot replay from ${notTape}`);
  });
});
