import { describe, expect, it } from 'vitest';
import {
  BreakerConfigError,
  type BreakerConfigInput,
  extractFeatures,
  LoopBreaker,
  OpenAICompatibleEmbedder,
  resolveBreakerConfig,
} from '../../src/breaker';
import type { BreakerMessage } from '../../src/breaker/features';
import { startModelServer } from '../../src/testing/modelserver';

const breakerOf = (input: Partial<BreakerConfigInput> = {}) =>
  new LoopBreaker(resolveBreakerConfig({ capUsd: 0.5, ...input }));

async function feed(breaker: LoopBreaker, messages: BreakerMessage[], track = 'a') {
  for (const [i, m] of messages.entries()) {
    const trip = breaker.observeMessage(track, await extractFeatures(m, { minChars: 24 }));
    if (trip) return { at: i, trip };
  }
  return undefined;
}

describe('the repetition detectors', () => {
  it('trip on a word-for-word repeat, ignoring case, spacing and punctuation', async () => {
    const hit = await feed(breakerOf(), [
      { text: 'I cannot open the file from here, please attach it.' },
      { text: 'Something else entirely happened in the meantime.' },
      { text: 'i cannot open the file from here -- please   attach it!' },
    ]);
    expect(hit).toMatchObject({ at: 2, trip: { detector: 'exact-repeat', track: 'a' } });
  });

  it('leave short acknowledgements alone', async () => {
    expect(
      await feed(breakerOf(), [{ text: 'OK.' }, { text: 'ok' }, { text: 'OK!' }, { text: 'Ok.' }]),
    ).toBeUndefined();
  });

  it('trip on the same tool call with shuffled argument and list order', async () => {
    const call = (args: Record<string, unknown>) => ({
      text: 'Searching.',
      toolCalls: [{ name: 'search', arguments: args }],
    });
    const hit = await feed(breakerOf(), [
      call({ q: 'cache', tags: ['a', 'b'], limit: 5 }),
      call({ limit: 5, tags: ['b', 'a'], q: 'cache' }),
      call({ tags: ['b', 'a'], q: ' cache', limit: 5 }),
    ]);
    expect(hit).toMatchObject({ at: 2, trip: { detector: 'tool-repeat' } });
    expect((hit!.trip.evidence as { matches: unknown[] }).matches).toHaveLength(2);
  });

  it('let paginated calls through even though their wording repeats', async () => {
    const pages = Array.from({ length: 12 }, (_, i) => ({
      text: `Fetching page ${i + 1} of the results about the cache.`,
      toolCalls: [{ name: 'list', arguments: { page: i + 1, q: 'cache' } }],
    }));
    expect(await feed(breakerOf(), pages)).toBeUndefined();
  });

  it('trip on the same program rewritten cosmetically the third time', async () => {
    const v = (name: string, acc: string) =>
      `\`\`\`ts\nfunction ${name}(xs: number[]) {\n  let ${acc} = 0;\n  for (const x of xs) ${acc} += x;\n  return ${acc};\n}\n\`\`\``;
    const hit = await feed(breakerOf(), [
      { text: v('sum', 'total') },
      { text: v('addAll', 'acc') },
      { text: `Cleaner:\n${v('total', 'running')}` },
    ]);
    expect(hit).toMatchObject({ at: 2, trip: { detector: 'code-repeat' } });
  });

  it('keep detectors that are switched off quiet', async () => {
    const same = { text: 'I cannot open the file from here, please attach it.' };
    expect(await feed(breakerOf({ detectors: ['tool-repeat'] }), [same, same, same])).toBeUndefined();
  });

  it('forget what fell out of the window', async () => {
    const same = { text: 'I cannot open the file from here, please attach it.' };
    const others = Array.from({ length: 3 }, (_, i) => ({
      text: `Distinct message number ${i} about topic ${i * 7}.`,
    }));
    expect(await feed(breakerOf({ windowSize: 3 }), [same, ...others, same])).toBeUndefined();
    expect(await feed(breakerOf({ windowSize: 4 }), [same, ...others, same])).toMatchObject({
      trip: { detector: 'exact-repeat' },
    });
  });
});

describe('spend detectors', () => {
  it('trip on dollars per minute over the window', () => {
    const b = breakerOf({ velocity: { maxUsdPerMinute: 0.01, minSteps: 3 } });
    expect(b.observeSpend('a', { startMs: 0, endMs: 3000, outputTokens: 1000, usd: 0.001 })).toBeUndefined();
    expect(
      b.observeSpend('a', { startMs: 3000, endMs: 6000, outputTokens: 1000, usd: 0.001 }),
    ).toBeUndefined();
    const trip = b.observeSpend('a', { startMs: 6000, endMs: 9000, outputTokens: 1000, usd: 0.001 });
    // $0.003 in 9 s is $0.02 a minute.
    expect(trip).toMatchObject({ detector: 'spend-velocity', track: 'a' });
    expect((trip!.evidence as { usdPerMinute: number }).usdPerMinute).toBeCloseTo(0.02, 6);
  });

  it('trip on the per-track cap and count tracks apart', () => {
    const b = breakerOf({ capUsd: 0.01, detectors: ['cost-cap'] });
    expect(b.observeSpend('a', { startMs: 0, endMs: 1, outputTokens: 1, usd: 0.006 })).toBeUndefined();
    expect(b.observeSpend('b', { startMs: 0, endMs: 1, outputTokens: 1, usd: 0.006 })).toBeUndefined();
    expect(b.observeSpend('a', { startMs: 1, endMs: 2, outputTokens: 1, usd: 0.006 })).toMatchObject({
      detector: 'cost-cap',
      track: 'a',
    });
    b.setCap(1);
    expect(b.observeSpend('a', { startMs: 2, endMs: 3, outputTokens: 1, usd: 0.006 })).toBeUndefined();
  });
});

describe('bad configuration', () => {
  it.each([
    [{ capUsd: 0 }, 'capUsd'],
    [{ capUsd: -1 }, 'capUsd'],
    [{ capUsd: Number.POSITIVE_INFINITY }, 'capUsd'],
    [{ capUsd: Number.NaN }, 'capUsd'],
    [{ capUsd: 1, semantic: { threshold: 1.5 } }, 'semantic.threshold'],
    [{ capUsd: 1, windowSize: 2.5 }, 'windowSize'],
    [{ capUsd: 1, detectors: ['vibes'] }, 'detectors'],
    [{ capUsd: 1, embedder: { kind: 'openai-compatible', baseURL: 'nope', model: 'm' } }, 'embedder.baseURL'],
  ])('refuses %j naming %s', (input, field) => {
    const err = (() => {
      try {
        resolveBreakerConfig(input as BreakerConfigInput);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(BreakerConfigError);
    expect(err).toMatchObject({ code: 'BREAKER_CONFIG_INVALID', field, nonRetryable: true });
    expect((err as Error).message).toContain('never falls back to "unlimited"');
  });

  it('refuses a missing config outright', () => {
    expect(() => resolveBreakerConfig(undefined)).toThrow(BreakerConfigError);
  });
});

describe('an embedder that fails', () => {
  it('degrades the semantic detector to the local n-grams, says so, and the other detectors keep tripping', async () => {
    // The local model server has no /v1/embeddings: a real endpoint answering 404.
    const server = await startModelServer({ script: { turns: [{ reply: { text: 'unused' } }] } });
    try {
      const embedder = new OpenAICompatibleEmbedder({
        baseURL: server.openaiBaseURL,
        model: 'text-embedding-3-small',
      });
      const b = breakerOf();
      const same = { text: 'I cannot open the file from here, please attach it.' };
      const first = await extractFeatures(same, { minChars: 24 }, { embedder });
      expect(first.embedding).toBeUndefined();
      expect(first.ngrams).toBeDefined();
      expect(first.degraded).toMatch(/embedder text-embedding-3-small at .* failed \(404/);
      expect(b.observeMessage('a', first)).toBeUndefined();
      const trip = b.observeMessage('a', await extractFeatures(same, { minChars: 24 }, { embedder }));
      expect(trip).toMatchObject({ detector: 'exact-repeat' });
      expect(b.degraded).toHaveLength(2);
      expect(b.degraded[0]).toContain('fell back to character 3-gram TF-IDF');
    } finally {
      await server.close();
    }
  });
});

describe('an OpenAI-compatible embedder', () => {
  it('feeds the semantic detector through the official client', async () => {
    // A real HTTP endpoint speaking the embeddings API, with a toy model: one dimension per meaning, synonyms
    // share it. It shows the adapter's wiring, not the quality of any real embedding model.
    const meanings = [
      /verif|check|confirm|look over/,
      /again|once more|second time|another/,
      /report|summary/,
      /weather|rain/,
    ];
    const http = await import('node:http');
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const { input, encoding_format } = JSON.parse(body) as { input: string; encoding_format?: string };
        const vector = meanings.map((m) => (m.test(String(input).toLowerCase()) ? 1 : 0));
        const embedding =
          encoding_format === 'base64'
            ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
            : vector;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'list',
            model: 'toy',
            data: [{ object: 'embedding', index: 0, embedding }],
            usage: { prompt_tokens: 1, total_tokens: 1 },
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as { port: number };
      const embedder = new OpenAICompatibleEmbedder({ baseURL: `http://127.0.0.1:${port}/v1`, model: 'toy' });
      const b = breakerOf({ detectors: ['semantic-repeat'], semantic: { embeddingThreshold: 0.95 } });
      const says = [
        'Could you please verify the report once more before we continue?',
        'The weather forecast says rain all week long in the north.',
        'Would you mind to look over that summary a second time, to be sure?',
        'Please check the report again so we are certain before going on.',
      ];
      const trips = [];
      for (const text of says) {
        const f = await extractFeatures({ text }, { minChars: 24 }, { embedder });
        expect(f.embedding).toHaveLength(4);
        expect(f.degraded).toBeUndefined();
        trips.push(b.observeMessage('a', f));
      }
      expect(trips.slice(0, 3)).toEqual([undefined, undefined, undefined]);
      expect(trips[3]).toMatchObject({ detector: 'semantic-repeat' });
      expect(trips[3]!.reason).toContain('sentence-embedding cosine >= 0.95');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
