import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BreakerConfigError, resolveBreakerConfig } from '../../src/breaker';
import { extractFeatures } from '../../src/breaker/extractFeatures';
import { BreakerFeatureSource } from '../../src/breaker/featureSource';
import {
  DEFAULT_EMBEDDING_MODEL_DIR,
  EmbeddingModelUnavailableError,
  LocalModelEmbedder,
} from '../../src/breaker/localEmbedder';
import { denseCosine, tfidfCosines } from '../../src/breaker/similarity';
import { WordPieceTokenizer } from '../../src/breaker/wordPieceTokenizer';

const ROOT = path.join(__dirname, '../..');
let modelDir: string;

beforeAll(() => {
  // The project's own installer: idempotent, a marker check when the model is already there.
  modelDir = execFileSync('bash', [path.join(ROOT, 'scripts/embedding-model.sh')], {
    encoding: 'utf8',
  }).trim();
}, 300_000);

describe('the local sentence-embedding model', () => {
  it('tokenizes like BERT uncased WordPiece: lowercase, accents stripped, punctuation split, subwords', () => {
    const t = new WordPieceTokenizer(JSON.parse(readFileSync(path.join(modelDir, 'tokenizer.json'), 'utf8')));
    expect(t.encode('Hello, world!')).toEqual([101, 7592, 1010, 2088, 999, 102]);
    const vocab = JSON.parse(readFileSync(path.join(modelDir, 'tokenizer.json'), 'utf8')).model
      .vocab as Record<string, number>;
    const names = new Map(Object.entries(vocab).map(([k, v]) => [v, k]));
    // Hugging Face's own WordPiece example.
    expect(t.encode('I have a new GPU!').map((id) => names.get(id))).toEqual([
      '[CLS]',
      'i',
      'have',
      'a',
      'new',
      'gp',
      '##u',
      '!',
      '[SEP]',
    ]);
    expect(t.encode('Café  CRÈME')).toEqual(t.encode('cafe creme'));
    const long = t.encode('word '.repeat(1000), 256);
    expect(long).toHaveLength(256);
    expect(long.at(-1)).toBe(102);
  });

  it("gives sentence-transformers' published similarities for all-MiniLM-L6-v2 (within int8 quantization)", async () => {
    const e = new LocalModelEmbedder(modelDir);
    const [weather, sunny, stadium] = await Promise.all(
      ['The weather is lovely today.', "It's so sunny outside!", 'He drove to the stadium.'].map((s) =>
        e.embed(s),
      ),
    );
    expect(weather).toHaveLength(384);
    expect(Math.hypot(...weather!)).toBeCloseTo(1, 5);
    // sentence-transformers' quickstart prints 0.6660, 0.1046 and 0.1411 for these pairs with the fp32 model.
    expect(Math.abs(denseCosine(weather!, sunny!) - 0.666)).toBeLessThan(0.03);
    expect(Math.abs(denseCosine(weather!, stadium!) - 0.1046)).toBeLessThan(0.03);
    expect(Math.abs(denseCosine(sunny!, stadium!) - 0.1411)).toBeLessThan(0.03);
  });

  it('sees a paraphrase that shares few words, which character n-grams miss', async () => {
    const e = new LocalModelEmbedder(modelDir);
    const a = 'I cannot open the notes file from here; could you attach it so I can continue?';
    const b = 'Opening the notes file fails for me; attach it, please, and then I can go on.';
    const fa = await extractFeatures({ text: a }, { minChars: 24 }, { embedder: e });
    const fb = await extractFeatures({ text: b }, { minChars: 24 }, { embedder: e });
    expect(fa.degraded).toBeUndefined();
    // Quantized to int8 for the tape: the cosine survives.
    expect(fa.embedding!.every((v) => Number.isInteger(v) && Math.abs(v) <= 127)).toBe(true);
    // Same request in other words: over the embedding threshold (0.8), under the n-gram one (0.5).
    expect(denseCosine(fa.embedding!, fb.embedding!)).toBeGreaterThan(0.8);
    expect(tfidfCosines(fa.ngrams!, [fb.ngrams!], [fa.ngrams!, fb.ngrams!])[0]).toBeLessThan(0.5);
  });

  it("defers a tool turn's embedding and hands it over once, from this worker or computed from the text by another", async () => {
    const request = {
      minChars: 24,
      embedder: { kind: 'local' as const, modelDir },
      deferToolTurnEmbeddings: true,
    };
    const text = 'I cannot open the notes file from here; could you attach it so I can continue?';
    const calls = [{ name: 'list_issues', arguments: { page: 1 } }];
    const here = new BreakerFeatureSource();
    const deferred = await here.features({ text, toolCalls: calls }, request, undefined, {
      run: 'r',
      step: 3,
    });
    expect(deferred.embeddingDeferred).toBe(true);
    expect(deferred.embedding).toBeUndefined();
    expect(deferred.ngrams).toBeDefined();
    // A plain answer is never deferred: the detectors compare it at once.
    const plain = await here.features({ text }, request, undefined, { run: 'r', step: 4 });
    expect(plain.embeddingDeferred).toBeUndefined();
    const pending = { ...request, pendingEmbeddings: [{ step: 3, text }] };
    const [mine] = await here.collectDeferred(pending, 'r');
    const [elsewhere] = await new BreakerFeatureSource().collectDeferred(pending, 'r');
    expect(mine).toEqual({ step: 3, embedding: plain.embedding });
    expect(elsewhere).toEqual(mine);
    // Collected once: asked again (a retried step), it is computed again, to the same vector.
    expect(await here.collectDeferred(pending, 'r')).toEqual([mine]);
  });

  it('embeds in the background on a thread of lowest priority, to the same vector', async () => {
    const e = new LocalModelEmbedder(modelDir);
    const text = 'The weather is lovely today.';
    const now = await e.embed(text);
    expect(await e.embed(text, undefined, { background: true })).toEqual(now);
    // Linux keeps a nice value per thread: the background session's thread has 19, the process stays at 0.
    const niced = () =>
      readdirSync('/proc/self/task').filter(
        (t) => readFileSync(`/proc/self/task/${t}/stat`, 'utf8').split(') ')[1]!.split(' ')[16] === '19',
      ).length;
    const withIt = niced();
    expect(withIt).toBeGreaterThan(0);
    expect(os.getPriority()).toBe(0);
    await e.close();
    expect(niced()).toBe(withIt - 1);
  });

  it('is the default embedder; a bad modelDir is a config error', () => {
    expect(resolveBreakerConfig({ capUsd: 1 }).embedder).toEqual({ kind: 'local' });
    expect(() => resolveBreakerConfig({ capUsd: 1, embedder: { kind: 'local', modelDir: '' } })).toThrow(
      BreakerConfigError,
    );
  });

  it('a missing model is reported with advice that works where the code runs: the install script only in a checkout', () => {
    const dir = path.join(os.tmpdir(), 'no-such-model-dir');
    const installed = new EmbeddingModelUnavailableError(dir, 'model.onnx is missing', undefined, false)
      .message;
    expect(installed).toContain(`model in ${dir} cannot be loaded: model.onnx is missing.`);
    expect(installed).toContain('point JUKEBOX_EMBEDDING_MODEL_DIR at a folder holding them');
    expect(installed).toContain("give the breaker embedder: { kind: 'ngram' }");
    expect(installed).not.toContain('scripts/');
    const checkout = new EmbeddingModelUnavailableError(dir, 'model.onnx is missing', undefined, true)
      .message;
    expect(checkout).toContain('(in this Jukebox checkout, `bash scripts/embedding-model.sh` installs it)');
    // This repository is a checkout: the default model folder is the one its script installs into.
    expect(DEFAULT_EMBEDDING_MODEL_DIR).toBe(path.join(ROOT, '.jukebox/models/all-minilm-l6-v2-q'));
  });

  it('a model that cannot load is a typed error, and the semantic detector falls back to n-grams saying so', async () => {
    const missing = new LocalModelEmbedder(path.join(os.tmpdir(), 'no-such-model-dir'));
    const err = await missing.embed('anything at all').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddingModelUnavailableError);
    expect((err as EmbeddingModelUnavailableError).code).toBe('BREAKER_EMBEDDING_MODEL_UNAVAILABLE');
    expect((err as Error).message).toMatch(/model\.onnx is missing.*scripts\/embedding-model\.sh/s);
    const f = await extractFeatures(
      { text: 'I cannot open the notes file, please attach it.' },
      { minChars: 24 },
      { embedder: missing },
    );
    expect(f.embedding).toBeUndefined();
    expect(f.ngrams).toBeDefined();
    expect(f.degraded).toMatch(/BREAKER_EMBEDDING|cannot be loaded.*fell back to character 3-gram TF-IDF/s);
  });
});
