import { Worker } from 'node:worker_threads';
import { crossRealmError, JukeboxError } from '../errors';
import { resolveOptional } from '../errors/optionalDependency';

/**
 * Embeddings one thread holds queued at most (its own plus waiting ones). Past that it is behind: each queued one
 * is a few milliseconds of a core, and a step that waits for its embedding would wait for all of them.
 */
export const EMBEDDING_QUEUE_LIMIT = 32;

/**
 * The embedding thread already holds its limit of queued embeddings (it is behind the steps asking for them). The
 * message is compared by its character 3-gram TF-IDF instead, as without a model, and the breaker lists it as
 * degraded with this message.
 */
export class EmbeddingQueueFullError extends JukeboxError {
  readonly limit: number;
  constructor(limit: number) {
    super(
      'BREAKER_EMBEDDING_BEHIND',
      `the embedding thread is behind (${limit} embeddings queued); this message was not embedded`,
      { nonRetryable: false },
    );
    this.limit = limit;
  }
}
crossRealmError('EmbeddingQueueFullError', EmbeddingQueueFullError);

/**
 * The thread's own code, plain CommonJS so it runs the same under tsx, vitest or compiled JavaScript (a worker
 * thread does not inherit a TypeScript loader everywhere). It owns one onnxruntime session: token ids in, the
 * L2-normalized mean of the last hidden states over the tokens out, as sentence-transformers computes it.
 * onnxruntime-node runs a session synchronously on the thread that calls it, so on the worker's main thread
 * every embedding stopped the event loop that streams model answers and hands activations to workflows.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// Linux keeps a nice value per thread: this one, not the process, yields to every other runnable thread.
if (workerData.niceness) try { require('node:os').setPriority(workerData.niceness); } catch {}
const ort = require(workerData.ortPath);
ort.InferenceSession.create(workerData.modelPath, workerData.sessionOptions).then(
  (session) => {
    const missing = ['input_ids', 'attention_mask'].filter((n) => !session.inputNames.includes(n));
    if (missing.length) {
      parentPort.postMessage({ type: 'failed', message: 'the model has no ' + missing[0] + ' input (inputs: ' + session.inputNames.join(', ') + ')' });
      return;
    }
    const typeIds = session.inputNames.includes('token_type_ids');
    parentPort.on('message', async ({ id, ids }) => {
      try {
        const n = ids.length;
        const feeds = {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (x) => BigInt(x)), [1, n]),
          attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
        };
        if (typeIds) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(n), [1, n]);
        const out = await session.run(feeds);
        const hidden = out[session.outputNames[0]];
        const data = hidden.data;
        const dim = hidden.dims[2];
        const mean = new Float64Array(dim);
        for (let t = 0; t < n; t++) for (let d = 0; d < dim; d++) mean[d] += data[t * dim + d];
        let norm = 0;
        for (let d = 0; d < dim; d++) {
          mean[d] = mean[d] / n;
          norm += mean[d] * mean[d];
        }
        norm = Math.sqrt(norm) || 1;
        for (let d = 0; d < dim; d++) mean[d] = mean[d] / norm;
        parentPort.postMessage({ type: 'embedding', id, vector: mean }, [mean.buffer]);
      } catch (err) {
        parentPort.postMessage({ type: 'error', id, message: err && err.message ? err.message : String(err) });
      }
    });
    parentPort.postMessage({ type: 'ready' });
  },
  (err) => parentPort.postMessage({ type: 'failed', message: err && err.message ? err.message : String(err) }),
);
`;

type FromThread =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'embedding'; id: number; vector: Float64Array }
  | { type: 'error'; id: number; message: string };

interface Waiting {
  resolve: (v: number[]) => void;
  reject: (e: Error) => void;
}

/**
 * One onnxruntime session on a thread of its own. Its work overlaps the worker's main thread (streaming, tape
 * writes, activations), and an embedding nobody waits for yet (a deferred one, see BreakerFeatureSource) costs
 * a step nothing. The thread does not keep the process alive.
 */
export class EmbeddingThread {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;
  private failure: Error | undefined;
  readonly ready: Promise<void>;
  /** Embeddings refused because the queue was full, since the thread started. */
  refused = 0;

  /**
   * `niceness` (0-19) lowers the thread's scheduling priority: a thread for work nobody waits for yet gets a core
   * only when nothing else wants it.
   */
  constructor(
    modelPath: string,
    sessionOptions: Record<string, unknown>,
    niceness = 0,
    private readonly queueLimit = EMBEDDING_QUEUE_LIMIT,
  ) {
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        ortPath: resolveOptional('onnxruntime-node', "The breaker's local embedding model"),
        modelPath,
        sessionOptions,
        niceness,
      },
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.on('message', (m: FromThread) => {
        if (m.type === 'ready') return resolve();
        if (m.type === 'failed') {
          this.fail(new Error(m.message));
          return reject(this.failure);
        }
        const w = this.waiting.get(m.id);
        if (!w) return;
        this.waiting.delete(m.id);
        this.idle();
        if (m.type === 'embedding') w.resolve(Array.from(m.vector));
        else w.reject(new Error(m.message));
      });
      const stop = (err: Error) => {
        this.fail(err);
        reject(err);
      };
      this.worker.on('error', stop);
      this.worker.on('exit', (code) => stop(new Error(`the embedding thread exited (code ${code})`)));
    });
    // A load failure is reported through embed(); these handlers also keep it from being an unhandled rejection.
    // The thread is held while a load or an embedding is under way (a process leaving mid-run aborts in onnxruntime's
    // teardown); let go when idle, after the listeners (attaching one refs the thread's port again).
    this.ready.then(
      () => this.idle(),
      () => this.idle(),
    );
  }

  private idle(): void {
    if (this.waiting.size === 0) this.worker.unref();
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const w of this.waiting.values()) w.reject(this.failure);
    this.waiting.clear();
  }

  /** Rejects with EmbeddingQueueFullError at once, queueing nothing, when `queueLimit` embeddings are queued. */
  async embed(ids: readonly number[]): Promise<number[]> {
    await this.ready;
    if (this.failure) throw this.failure;
    if (this.waiting.size >= this.queueLimit) {
      this.refused++;
      throw new EmbeddingQueueFullError(this.queueLimit);
    }
    const id = this.nextId++;
    return new Promise<number[]>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ id, ids });
    });
  }

  /** Embeddings queued or running now. */
  get queued(): number {
    return this.waiting.size;
  }

  /** Stops the thread (tests, or a worker that is shutting down for good). */
  async close(): Promise<void> {
    this.fail(new Error('the embedding thread was closed'));
    await this.worker.terminate();
  }
}
