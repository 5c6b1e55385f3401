/**
 * What the recording proxy costs a client: latency per request and per streamed chunk through `jbx proxy`
 * (recording onto a tape with the default 'step' fsync, and replaying from it) against calling the local model
 * server directly, all measured in the same run with the same fetch client.
 */
import { mkdtempSync, rmSync } from 'node:fs';
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
    try {
      const direct = `${model.url}/v1`;
      const proxied = `${recorder.url}/v1`;
      // Interleaved, so drift in machine load hits both sides alike.
      const directReq: number[] = [];
      const proxyReq: number[] = [];
      await timeRuns(REQUESTS, async (i) => {
        const t0 = performance.now();
        await call(direct, `q${i}`, false);
        directReq.push(performance.now() - t0);
        const t1 = performance.now();
        await call(proxied, `q${i}`, false);
        proxyReq.push(performance.now() - t1);
      });
      let chunks = 0;
      const directChunk: number[] = [];
      const proxyChunk: number[] = [];
      await timeRuns(STREAMS, async (i) => {
        const t0 = performance.now();
        chunks = await call(direct, `stream ${i}`, true);
        directChunk.push((performance.now() - t0) / chunks);
        const t1 = performance.now();
        await call(proxied, `stream ${i}`, true);
        proxyChunk.push((performance.now() - t1) / chunks);
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
      return [
        result(
          'proxy request latency, recording',
          median(proxyReq),
          'ms/request',
          'direct to model server',
          d,
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
          `${chunks} SSE events per stream`,
        ),
      ];
    } finally {
      await recorder.close();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
