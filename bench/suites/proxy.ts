/**
 * What the recording proxy costs a client: latency per request and per streamed chunk through `jbx proxy`
 * (recording onto a tape with the default 'step' fsync, and replaying from it) against calling the local model
 * server directly, all measured in the same run with the same fetch client.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startProxy } from '../../src/integrations/proxy';
import { startModelServer } from '../../src/testing/modelserver';
import { type BenchResult, type BenchSuite, median, result, timeRuns } from '../harness';

const REQUESTS = 60;
const STREAMS = 12;
const STREAM_CHARS = 400;

const body = (content: string, stream: boolean) =>
  JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], stream });

async function call(baseURL: string, content: string, stream: boolean): Promise<number> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(content, stream),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`bench call failed: ${res.status} ${text}`);
  return stream ? text.split('\n\n').filter((e) => e.startsWith('data:')).length : 1;
}

const NOT_FORWARDED = new Set([
  'host',
  'connection',
  'content-length',
  'accept-encoding',
  'keep-alive',
  'transfer-encoding',
  'content-encoding',
]);

/**
 * The bound of any proxy: one more HTTP hop and nothing else. A node:http server that forwards each request
 * with fetch and writes the answer back the way `jbx proxy` does (a whole body in one write, a stream read by
 * read), recording nothing.
 */
async function startForwarder(upstream: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined && !NOT_FORWARDED.has(k)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const answer = await fetch(`${upstream}${req.url}`, {
      method: req.method,
      headers,
      body: Buffer.concat(chunks).toString('utf8'),
    });
    const out: http.OutgoingHttpHeaders = {};
    answer.headers.forEach((v, k) => {
      if (!NOT_FORWARDED.has(k)) out[k] = v;
    });
    if (!answer.headers.get('content-type')?.includes('text/event-stream') || !answer.body) {
      const bytes = Buffer.from(await answer.arrayBuffer());
      res.writeHead(answer.status, { ...out, 'content-length': bytes.length });
      res.end(bytes);
      return;
    }
    res.writeHead(answer.status, out);
    const reader = answer.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export const proxySuite: BenchSuite = {
  name: 'proxy',
  breaker:
    "off (breaker: false) on both proxies: the suite sends 60 requests the model answers with the same text, which the exact-repeat detector is built to stop; what is measured is the recording cost (the breaker's is the breaker suite's)",
  async run(): Promise<BenchResult[]> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-proxy-'));
    const model = await startModelServer({
      script: {
        turns: [
          {
            match: { lastUser: 'stream' },
            reply: { text: 'y'.repeat(STREAM_CHARS), chunkSize: 1 },
            repeat: true,
          },
          { reply: { text: 'A short answer.' }, repeat: true },
        ],
      },
    });
    const recorder = await startProxy({ upstream: model.url, tapeDir: dir, breaker: false });
    const forwarder = await startForwarder(model.url);
    try {
      const direct = `${model.url}/v1`;
      const proxied = `${recorder.url}/v1`;
      const forwarded = `${forwarder.url}/v1`;
      // Interleaved, so drift in machine load hits every side alike.
      const directReq: number[] = [];
      const proxyReq: number[] = [];
      const forwardReq: number[] = [];
      await timeRuns(REQUESTS, async (i) => {
        const t0 = performance.now();
        await call(direct, `q${i}`, false);
        const t1 = performance.now();
        await call(proxied, `q${i}`, false);
        const t2 = performance.now();
        await call(forwarded, `q${i}`, false);
        directReq.push(t1 - t0);
        proxyReq.push(t2 - t1);
        forwardReq.push(performance.now() - t2);
      });
      let chunks = 0;
      const directChunk: number[] = [];
      const proxyChunk: number[] = [];
      const forwardChunk: number[] = [];
      await timeRuns(STREAMS, async (i) => {
        const t0 = performance.now();
        chunks = await call(direct, `stream ${i}`, true);
        const t1 = performance.now();
        await call(proxied, `stream ${i}`, true);
        const t2 = performance.now();
        await call(forwarded, `stream ${i}`, true);
        directChunk.push((t1 - t0) / chunks);
        proxyChunk.push((t2 - t1) / chunks);
        forwardChunk.push((performance.now() - t2) / chunks);
      });
      // The same requests with tape fsync off: how much of the recording cost is the disk.
      const unsynced = await startProxy({
        upstream: model.url,
        tapeDir: path.join(dir, 'unsynced'),
        fsync: 'none',
        breaker: false,
      });
      const unsyncedReq: number[] = [];
      try {
        await timeRuns(REQUESTS, async (i) => {
          const t0 = performance.now();
          await call(`${unsynced.url}/v1`, `q${i}`, false);
          unsyncedReq.push(performance.now() - t0);
        });
      } finally {
        await unsynced.close();
      }
      await recorder.close();
      const tape = recorder.sessions()[0]?.tape as string;
      const replayer = await startProxy({ replay: tape });
      const replayReq: number[] = [];
      try {
        for (let i = 0; i <= REQUESTS; i++) {
          const t0 = performance.now();
          await call(`${replayer.url}/v1`, `q${i}`, false);
          replayReq.push(performance.now() - t0);
        }
      } finally {
        await replayer.close();
      }
      const d = median(directReq);
      const dc = median(directChunk);
      const f = median(forwardReq);
      const fc = median(forwardChunk);
      return [
        result(
          'proxy request latency, recording',
          median(proxyReq),
          'ms/request',
          'direct to model server',
          d,
          `target ratio <= 1.5; its bound, the extra hop alone (a forwarding proxy, below): ${f.toFixed(2)} ms, ratio ${(f / d).toFixed(2)}`,
        ),
        result(
          'proxy request latency, forwarding only (node:http + fetch, nothing recorded)',
          f,
          'ms/request',
          'direct to model server',
          d,
          'the bound of any proxy: one more HTTP hop',
        ),
        result(
          'proxy request latency, recording, against forwarding only',
          median(proxyReq),
          'ms/request',
          'forwarding only',
          f,
          "what recording adds: the request and response frames under the tape's lock, the step's fsync",
        ),
        result(
          'proxy request latency, recording, fsync none',
          median(unsyncedReq),
          'ms/request',
          'direct to model server',
          d,
        ),
        result('proxy request latency, replay', median(replayReq), 'ms/request', 'direct to model server', d),
        result(
          'proxy streamed chunk, recording',
          median(proxyChunk) * 1000,
          'us/chunk',
          'direct to model server',
          dc * 1000,
          `${chunks} SSE events per stream; target ratio <= 1.5; forwarding only: ${(fc * 1000).toFixed(2)} us, ratio ${(fc / dc).toFixed(2)}`,
        ),
        result(
          'proxy streamed chunk, recording, against forwarding only',
          median(proxyChunk) * 1000,
          'us/chunk',
          'forwarding only (node:http + fetch)',
          fc * 1000,
          'what recording adds per chunk: the SSE parse and re-framing, the chunk kept for the tape (redacted), its share of the frames',
        ),
      ];
    } finally {
      await recorder.close();
      await forwarder.close();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
