import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { crossRealmError, JukeboxError } from '../errors';
import type { Embedder } from './embedder';
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

type Ort = typeof import('onnxruntime-node');
interface Loaded {
  ort: Ort;
  session: import('onnxruntime-node').InferenceSession;
  tokenizer: WordPieceTokenizer;
}

/**
 * all-MiniLM-L6-v2 (int8-quantized ONNX) run in-process with onnxruntime-node: WordPiece tokens in, mean of
 * the last hidden states over the real tokens out, L2-normalized, as sentence-transformers computes it. No
 * network: the model is a file installed by scripts/embedding-model.sh. Loaded on first use; a failed load is
 * remembered, so every later message reports the same typed error instead of retrying a missing file.
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
      try {
        const ort = (await import('onnxruntime-node')) as Ort;
        // One thread: the breaker shares the worker's cores with the agents it watches.
        const session = await ort.InferenceSession.create(onnx, {
          intraOpNumThreads: 1,
          interOpNumThreads: 1,
          graphOptimizationLevel: 'all',
        });
        for (const input of ['input_ids', 'attention_mask'])
          if (!session.inputNames.includes(input))
            throw new Error(`the model has no ${input} input (inputs: ${session.inputNames.join(', ')})`);
        return { ort, session, tokenizer };
      } catch (err) {
        throw new EmbeddingModelUnavailableError(
          this.modelDir,
          `onnxruntime could not load model.onnx (${err instanceof Error ? err.message : String(err)})`,
          err,
        );
      }
    })();
    return this.loading;
  }

  async embed(text: string): Promise<number[]> {
    const { ort, session, tokenizer } = await this.load();
    const ids = tokenizer.encode(text, this.maxTokens);
    const n = ids.length;
    const big = (xs: number[]) => BigInt64Array.from(xs, (x) => BigInt(x));
    const feeds: Record<string, import('onnxruntime-node').Tensor> = {
      input_ids: new ort.Tensor('int64', big(ids), [1, n]),
      attention_mask: new ort.Tensor('int64', big(ids.map(() => 1)), [1, n]),
    };
    if (session.inputNames.includes('token_type_ids'))
      feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(n), [1, n]);
    const out = await session.run(feeds);
    const hidden = out[session.outputNames[0]!]!;
    const data = hidden.data as Float32Array;
    const dim = hidden.dims[2]!;
    const mean = new Array<number>(dim).fill(0);
    for (let t = 0; t < n; t++) for (let d = 0; d < dim; d++) mean[d]! += data[t * dim + d]!;
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      mean[d] = mean[d]! / n;
      norm += mean[d]! * mean[d]!;
    }
    norm = Math.sqrt(norm) || 1;
    return mean.map((v) => v / norm);
  }
}
