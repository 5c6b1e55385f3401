import { createHash } from 'node:crypto';
import { resolveBreakerConfig } from '../../src/breaker/config';
import { extractFeatures } from '../../src/breaker/extractFeatures';
import type { MessageFeatures } from '../../src/breaker/features';
import { LocalModelEmbedder } from '../../src/breaker/localEmbedder';
import { LoopBreaker } from '../../src/breaker/loopBreaker';
import { StreamGuard } from '../../src/breaker/streamGuard';
import { LlmClient, localEndpoints } from '../../src/llm';
import { DEFAULT_PRICE_TABLE, PriceBook } from '../../src/llm/pricing';
import type { LlmRequest, StreamChunk } from '../../src/llm/types';
import { startModelServer } from '../../src/testing/modelserver';
import { type BenchSuite, median, result } from '../harness';

const config = resolveBreakerConfig({ capUsd: 0.5 });
const TEXT = (i: number) =>
  `Step ${i}: the cache hit rate dropped to ${60 + (i % 30)} percent after deploy ${i}; I will check the eviction policy and report back on topic ${i % 17}.`;
const CODE = (i: number) =>
  `Version ${i}:\n\`\`\`ts\nexport function total${i}(xs: number[]): number {\n  let acc = ${i};\n  for (const x of xs) {\n    if (x > ${i % 7}) acc += x;\n  }\n  return acc;\n}\n\`\`\``;

function perOp(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 200); i++) fn(i);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  return ((performance.now() - t0) * 1000) / n;
}

async function perOpAsync(n: number, fn: (i: number) => Promise<void>): Promise<number> {
  for (let i = 0; i < Math.min(n, 50); i++) await fn(i);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return ((performance.now() - t0) * 1000) / n;
}

/**
 * The breaker's cost: per message (features + detectors), per streamed chunk (the cost cap), the memory its
 * window holds as a run grows, and its share of one streamed llm step.
 */
export const breakerSuite: BenchSuite = {
  name: 'breaker',
  breaker:
    'measured itself: the detectors and the cost cap are the subject, on synthetic messages and streams',
  async run() {
    const out = [];

    // Per message: what today's exact-repeat guard does (hash the text, look it up) is the peer.
    const seen = new Set<string>();
    const exactPeer = perOp(5000, (i) => {
      seen.add(createHash('sha256').update(TEXT(i)).digest('hex'));
    });
    const textBreaker = new LoopBreaker(config);
    const textCost = await perOpAsync(2000, async (i) => {
      textBreaker.observeMessage('a', await extractFeatures({ text: TEXT(i) }, config));
    });
    out.push(
      result(
        'breaker: per text message (features + all detectors)',
        textCost,
        'µs',
        'sha256 exact-repeat check',
        exactPeer,
      ),
    );
    // The default semantic detector: the local sentence-embedding model (npm run bench installs it first).
    const embedder = new LocalModelEmbedder();
    await embedder.load();
    const embedBreaker = new LoopBreaker(config);
    const embedCost = await perOpAsync(300, async (i) => {
      embedBreaker.observeMessage('a', await extractFeatures({ text: TEXT(i) }, config, { embedder }));
    });
    out.push(
      result(
        'breaker: per text message with the local embedding model (all-MiniLM-L6-v2 int8, 1 thread)',
        embedCost / 1000,
        'ms',
        'one LLM step of 500 ms',
        500,
        'target ratio <= 0.01',
      ),
    );
    const codeBreaker = new LoopBreaker(config);
    const codeCost = await perOpAsync(500, async (i) => {
      codeBreaker.observeMessage('a', await extractFeatures({ text: CODE(i) }, config));
    });
    out.push(
      result(
        'breaker: per message with a TS code block (parsed)',
        codeCost,
        'µs',
        'sha256 exact-repeat check',
        exactPeer,
      ),
    );

    // Per chunk: the SDK already JSON-parses every SSE chunk; that is the peer.
    const request: LlmRequest = {
      provider: 'openai',
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: TEXT(1) }],
    };
    const price = new PriceBook(DEFAULT_PRICE_TABLE).priceOf('openai', 'gpt-4o-mini');
    const guard = new StreamGuard({ track: 'a', spentUsd: 0, capUsd: 1e9 }, price, request);
    const raw = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { content: 'some text here!!' }, finish_reason: null }],
    };
    const sse = JSON.stringify(raw);
    const chunkPeer = perOp(200_000, () => {
      JSON.parse(sse);
    });
    const chunk: StreamChunk = { index: 0, offsetMs: 0, text: 'some text here!!', raw };
    const chunkCost = perOp(200_000, () => {
      guard.onChunk(chunk);
    });
    out.push(
      result(
        'breaker: cost cap per streamed chunk',
        chunkCost,
        'µs',
        'JSON.parse of the SSE chunk',
        chunkPeer,
      ),
    );

    // Memory: the breaker's state after 1,000 and after 10,000 messages of one track, against keeping them all.
    const stateBytes = (n: number) => {
      const b = new LoopBreaker(config);
      const all: MessageFeatures[] = [];
      return (async () => {
        for (let i = 0; i < n; i++) {
          const f = await extractFeatures({ text: TEXT(i) }, config);
          b.observeMessage('a', f);
          b.observeSpend('a', { startMs: i * 1000, endMs: i * 1000 + 900, outputTokens: 100, usd: 1e-6 });
          all.push(f);
        }
        const state = JSON.stringify([...(b as unknown as { tracks: Map<string, unknown> }).tracks]);
        return { breaker: state.length, unbounded: JSON.stringify(all).length };
      })();
    };
    const small = await stateBytes(1000);
    const large = await stateBytes(10_000);
    out.push(
      result(
        'breaker: state bytes after 10k messages / after 1k',
        large.breaker / small.breaker,
        'x',
        'all features kept (10k / 1k)',
        large.unbounded / small.unbounded,
        `window ${config.windowSize} messages: ${large.breaker} bytes at 10k messages`,
      ),
    );

    // One llm step streamed from the local model server (100 chunks, 5 ms apart, like a fast real API), with the
    // breaker's work for that step (cost cap on each chunk, features with the embedding and detectors on the
    // reply) timed inside it.
    const reply = TEXT(7).repeat(12);
    const server = await startModelServer({
      script: {
        turns: [
          { reply: { text: reply, chunkSize: Math.ceil(reply.length / 100), chunkDelayMs: 5 }, repeat: true },
        ],
      },
    });
    try {
      const llm = new LlmClient(localEndpoints(server.url));
      const stepMs: number[] = [];
      const breakerMs: number[] = [];
      const b = new LoopBreaker(config);
      for (let i = 0; i < 12; i++) {
        const g = new StreamGuard({ track: 'a', spentUsd: 0, capUsd: 1e9 }, price, request);
        let inBreaker = 0;
        const t0 = performance.now();
        const response = await llm.call(request, {
          onChunk: (c) => {
            const s = performance.now();
            g.onChunk(c);
            inBreaker += performance.now() - s;
          },
        });
        const s = performance.now();
        b.observeMessage('a', await extractFeatures({ text: response.text }, config, { embedder }));
        b.observeSpend('a', { startMs: t0, endMs: performance.now(), outputTokens: 1, usd: 1e-6 });
        inBreaker += performance.now() - s;
        if (i >= 2) {
          stepMs.push(performance.now() - t0);
          breakerMs.push(inBreaker);
        }
      }
      out.push(
        result(
          'breaker: its work inside one streamed llm step',
          median(breakerMs),
          'ms',
          'the llm step (100 chunks, 5 ms apart)',
          median(stepMs),
          'target ratio <= 0.01',
        ),
      );
    } finally {
      await server.close();
    }
    return out;
  },
};
