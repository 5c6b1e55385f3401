import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingQueueFullError } from '../../src/breaker/embeddingThread';
import { extractFeatures } from '../../src/breaker/extractFeatures';
import { LocalModelEmbedder } from '../../src/breaker/localEmbedder';

const ROOT = path.join(__dirname, '../..');
let embedder: LocalModelEmbedder;

beforeAll(() => {
  // The project's own installer: idempotent, a marker check when the model is already there.
  const modelDir = execFileSync('bash', [path.join(ROOT, 'scripts/embedding-model.sh')], {
    encoding: 'utf8',
  }).trim();
  embedder = new LocalModelEmbedder(modelDir, 256, 2);
}, 300_000);
afterAll(() => embedder?.close());

const sentence = (i: number) =>
  `Checking the knowledge base once more, attempt number ${i}, before answering.`;

describe('the embedding thread under more requests than it keeps up with', () => {
  it('queues at most its limit and refuses the rest at once, typed, queueing nothing', async () => {
    await embedder.load();
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => embedder.embed(sentence(i))),
    );
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', ...Array(8).fill('rejected')]);
    for (const s of settled.slice(2)) {
      const err = (s as PromiseRejectedResult).reason;
      expect(err).toBeInstanceOf(EmbeddingQueueFullError);
      expect(err).toMatchObject({ code: 'BREAKER_EMBEDDING_BEHIND', limit: 2 });
    }
    expect(embedder.refused).toBe(8);
    // Caught up: the next one is embedded.
    expect(await embedder.embed(sentence(11))).toHaveLength(384);
  });

  it('leaves a message it could not embed its character 3-grams, and says why', async () => {
    await embedder.load();
    const text = sentence(0);
    const all = await Promise.all(
      Array.from({ length: 6 }, () => extractFeatures({ text }, { minChars: 10 }, { embedder })),
    );
    const embedded = all.filter((f) => f.embedding);
    const fellBack = all.filter((f) => !f.embedding);
    expect(embedded).toHaveLength(2);
    expect(fellBack).toHaveLength(4);
    for (const f of fellBack) {
      expect(f.ngrams).toEqual(embedded[0]!.ngrams);
      expect(f.degraded).toMatch(
        /the embedding thread is behind \(2 embeddings queued\).*fell back to character 3-gram TF-IDF/,
      );
    }
  });
});
