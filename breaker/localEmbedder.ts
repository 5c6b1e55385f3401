import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { crossRealmError, JukeboxError } from '../errors';
import type { Embedder } from './embedder';
import { EmbeddingThread } from './embeddingThread';
import { type TokenizerJson, WordPieceTokenizer } from './wordPieceTokenizer';

/** Where scripts/embedding-model.sh installs the model (`npm test` and `npm run bench` run it). */
export const DEFAULT_EMBEDDING_MODEL_DIR = path.join(
  __dirname,
  '..',
  '.jukebox',
  'models',
  'all-minilm-l6-v2-q',
);

/** The folder the local embedder loads from: `JUKEBOX_EMBEDDING_MODEL_DIR`, else the installed default. */
export const embeddingModelDir = (env: NodeJS.ProcessEnv = process.env): string =>
  env.JUKEBOX_EMBEDDING_MODEL_DIR || DEFAULT_EMBEDDING_MODEL_DIR;

/**
 * The local sentence-embedding model could not be loaded (not installed, unreadable, not an ONNX BERT). The
 * semantic detector then falls back to character 3-gram TF-IDF and says so (breaker status `degraded`).
 */
export class EmbeddingModelUnavailableError extends JukeboxError {
  constructor(
    readonly modelDir: string,
    problem: string,
    cause?: unknown,
  ) {
    super(
      'BREAKER_EMBEDDING_MODEL_UNAVAILABLE',
      `The breaker's sentence-embedding model in ${modelDir} cannot be loaded: ${problem}. Install it with ` +
        '`bash scripts/embedding-model.sh` (or point JUKEBOX_EMBEDDING_MODEL_DIR at a folder holding model.onnx ' +
        'and tokenizer.json); until then the semantic detector uses character 3-gram TF-IDF.',
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('EmbeddingModelUnavailableError', EmbeddingModelUnavailableError);

interface Loaded {
  thread: EmbeddingThread;
  tokenizer: WordPieceTokenizer;
}

/**
 * all-MiniLM-L6-v2 (int8-quantized ONNX) run in-process with onnxruntime-node on a thread of its own
 * (embeddingThread.ts): WordPiece tokens in, the mean of the last hidden states over the real tokens out,
 * L2-normalized, as sentence-transformers computes it. No network: the model is a file installed by
 * scripts/embedding-model.sh. Loaded on first use; a failed load is remembered, so every later message reports
 * the same typed error instead of retrying a missing file.
 */
export class LocalModelEmbedder implements Embedder {
  readonly name: string;
  private loading: Promise<Loaded> | undefined;

  constructor(
    readonly modelDir: string = embeddingModelDir(),
    private readonly maxTokens = 256,
  ) {
    this.name = `all-MiniLM-L6-v2 (local ONNX, ${modelDir})`;
  }

  /** Loads the model now (e.g. at worker start, to log a clear message); rejects with EmbeddingModelUnavailableError. */
  load(): Promise<Loaded> {
    this.loading ??= (async () => {
      const onnx = path.join(this.modelDir, 'model.onnx');
      const tok = path.join(this.modelDir, 'tokenizer.json');
      for (const f of [onnx, tok])
        if (!existsSync(f))
          throw new EmbeddingModelUnavailableError(this.modelDir, `${path.basename(f)} is missing`);
      let tokenizer: WordPieceTokenizer;
      try {
        tokenizer = new WordPieceTokenizer(JSON.parse(readFileSync(tok, 'utf8')) as TokenizerJson);
      } catch (err) {
        throw new EmbeddingModelUnavailableError(
          this.modelDir,
          `tokenizer.json is unusable (${String(err)})`,
          err,
        );
      }
      // One thread inside the session: the breaker shares the worker's cores with the agents it watches.
      const thread = new EmbeddingThread(onnx, {
        intraOpNumThreads: 1,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
      });
      try {
        await thread.ready;
      } catch (err) {
        throw new EmbeddingModelUnavailableError(
          this.modelDir,
          `onnxruntime could not load model.onnx (${err instanceof Error ? err.message : String(err)})`,
          err,
        );
      }
      return { thread, tokenizer };
    })();
    return this.loading;
  }

  async embed(text: string): Promise<number[]> {
    const { thread, tokenizer } = await this.load();
    return thread.embed(tokenizer.encode(text, this.maxTokens));
  }

  /** Stops the model's thread; a later embed() fails. Workers never need this (the thread does not hold the process). */
  async close(): Promise<void> {
    const loaded = await this.loading?.catch(() => undefined);
    await loaded?.thread.close();
  }
}
