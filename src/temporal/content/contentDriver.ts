/**
 * Jukebox's driver for Temporal's external storage (`DataConverter.externalStorage`, @temporalio/common 1.24):
 * a payload past the threshold goes to the run's content store (src/recorder/content/) and the history keeps a
 * claim of about 200 bytes. A JSON payload is stored as content-addressed pieces, so a step that resends the
 * whole conversation stores only what is new since the last one; any other payload is one blob.
 *
 * The SDK runs the driver outside the workflow sandbox: in the worker, on each workflow activation (retrieve)
 * and activation completion (store), and on each activity task and its completion; in the client, on what it
 * sends and reads. So it may do I/O, and the workflow code never sees a claim. Docs: docs/tape-store.md.
 */
import {
  type Payload,
  type StorageDriver,
  StorageDriverClaim,
  type StorageDriverRetrieveContext,
  type StorageDriverStoreContext,
} from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  atSite,
  BlobCache,
  ContentDamagedError,
  ContentMissingError,
  type ContentStore,
  type ContentTimings,
  contentHash,
  joinJson,
  type PieceOptions,
  type SplitJson,
  splitJson,
} from '../../recorder/content';
import { UNRESOLVED_CONTENT, type UnresolvedContent } from './unresolvedContent';

const PayloadMessage = temporal.api.common.v1.Payload;
export const CONTENT_DRIVER_NAME = 'jukebox';
export const CONTENT_DRIVER_TYPE = 'jukebox.content';

const JSON_ENCODING = 'json/plain';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface ContentDriverOptions extends PieceOptions {
  /**
   * What retrieve does with a reference it cannot resolve: `throw` (clients: the read fails with
   * ContentMissingError / ContentDamagedError), or `mark` (workers: the payload becomes an UNRESOLVED_CONTENT
   * value that the agent workflow and the activity interceptor turn into that error for the step, so the run
   * fails with it instead of a workflow task failing over and over).
   */
  unresolved?: 'throw' | 'mark';
  /**
   * Bytes of whole JSON payloads this driver stored or read lately, kept by their root blob (default 16 MiB;
   * 0: none): a step's input, stored as its workflow task completes, is read back at once by the activity on
   * the same worker, and a result the other way round, with no blob to fetch or join.
   */
  cacheBytes?: number;
  /** Counts store and retrieve calls with their time (benchmarks). */
  timings?: ContentTimings;
}

/** The claim's fields (ExternalStorageReference.claimData, strings only). */
interface ClaimData {
  /** `json`: the payload's JSON text as pieces, rooted at `hash`; `payload`: the Payload message, one blob. */
  kind: 'json' | 'payload';
  hash: string;
  /** Length of the payload's data (json) or of the encoded Payload (payload), in bytes. */
  bytes: string;
  /** The agent step the payload belongs to, when its JSON said (`{"step":N,...}`). */
  step?: string;
}

function isPlainJson(p: Payload): boolean {
  const keys = Object.keys(p.metadata ?? {});
  return (
    keys.length === 1 &&
    keys[0] === 'encoding' &&
    decoder.decode(p.metadata!.encoding!) === JSON_ENCODING &&
    p.data instanceof Uint8Array &&
    !p.externalPayloads?.length
  );
}

/** Prestored texts kept split until the SDK stores them: a worker's activities completing at once. */
const PRESPLIT_TEXTS = 64;

const DEFAULT_PAYLOAD_CACHE_BYTES = 16 * 1024 * 1024;

const STEP = /^\{"step":(\d{1,9})[,}]/;

export class ContentDriver implements StorageDriver {
  readonly name = CONTENT_DRIVER_NAME;
  readonly type = CONTENT_DRIVER_TYPE;
  private readonly unresolved: 'throw' | 'mark';
  // Blobs whose put is under way, by hash: a store() that needs one waits for that put instead of writing it
  // again (a step result prestored as its activity returned, then stored by the SDK as it completes the task).
  private readonly inflight = new Map<string, Promise<void>>();
  // The pieces of texts prestored lately, so the SDK's store of the same text does not cut it again.
  private readonly presplit = new Map<string, SplitJson>();
  private readonly payloads: BlobCache | undefined;

  constructor(
    readonly content: ContentStore,
    private readonly options: ContentDriverOptions = {},
  ) {
    this.unresolved = options.unresolved ?? 'throw';
    const cacheBytes = options.cacheBytes ?? DEFAULT_PAYLOAD_CACHE_BYTES;
    this.payloads = cacheBytes > 0 ? new BlobCache(cacheBytes) : undefined;
  }

  async store(_context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    const t = this.options.timings;
    const t0 = t ? performance.now() : 0;
    const blobs = new Map<string, Uint8Array>();
    const whole: [string, Uint8Array][] = [];
    const claims = payloads.map((p) => {
      let data: ClaimData | undefined;
      if (isPlainJson(p)) {
        const text = decoder.decode(p.data!);
        const split = this.presplit.get(text) ?? splitJson(text, this.options);
        this.presplit.delete(text);
        if (split) {
          for (const [h, b] of split.blobs) blobs.set(h, b);
          whole.push([split.root, p.data!]);
          const step = STEP.exec(text)?.[1];
          data = {
            kind: 'json',
            hash: split.root,
            bytes: String(p.data!.byteLength),
            ...(step ? { step } : {}),
          };
        }
      }
      if (!data) {
        const bytes = PayloadMessage.encode(p).finish();
        const hash = contentHash(bytes);
        blobs.set(hash, bytes);
        data = { kind: 'payload', hash, bytes: String(bytes.byteLength) };
      }
      return new StorageDriverClaim({ ...data });
    });
    await this.put(blobs);
    for (const [root, data] of whole) this.payloads?.set(root, data);
    if (t) {
      t.storeCalls++;
      t.storeMs += performance.now() - t0;
      t.payloadsStored += payloads.length;
      for (const p of payloads) t.payloadBytesStored += p.data?.byteLength ?? 0;
    }
    return claims;
  }

  /**
   * Starts storing the pieces of a JSON text the SDK is about to store (a step's result, as its activity
   * returns): store() then finds them under way or done. A failure here is left to that store(), which
   * writes again what did not make it.
   */
  prestore(text: string): void {
    const split = splitJson(text, this.options);
    if (!split) return;
    this.presplit.set(text, split);
    if (this.presplit.size > PRESPLIT_TEXTS)
      this.presplit.delete(this.presplit.keys().next().value as string);
    this.put(split.blobs).catch(() => {});
  }

  private async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    const waits: Promise<void>[] = [];
    const fresh = new Map<string, Uint8Array>();
    for (const [hash, bytes] of blobs) {
      const under = this.inflight.get(hash);
      if (under) waits.push(under);
      else fresh.set(hash, bytes);
    }
    if (fresh.size > 0) {
      const put = this.content.put(fresh);
      for (const hash of fresh.keys()) this.inflight.set(hash, put);
      const done = () => {
        for (const hash of fresh.keys()) if (this.inflight.get(hash) === put) this.inflight.delete(hash);
      };
      put.then(done, done);
      waits.push(put);
    }
    const settled = await Promise.allSettled(waits);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (!failed) return;
    // Another call's put failed (a prestore's, say): this one writes those blobs itself before it gives up.
    if (fresh.size === blobs.size) throw failed.reason;
    await this.content.put(blobs);
  }

  async retrieve(_context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    const t = this.options.timings;
    const t0 = t ? performance.now() : 0;
    const out = await Promise.all(claims.map((c) => this.retrieveOne(c.claimData as unknown as ClaimData)));
    if (t) {
      t.retrieveCalls++;
      t.retrieveMs += performance.now() - t0;
    }
    return out;
  }

  private async retrieveOne(claim: ClaimData): Promise<Payload> {
    const step = claim.step === undefined ? undefined : Number(claim.step);
    const where = this.content.location;
    try {
      const bytes = Number(claim.bytes);
      if (claim.kind === 'payload') {
        const blob = await this.content.get(claim.hash);
        return PayloadMessage.decode(blob);
      }
      if (claim.kind !== 'json' || !Number.isSafeInteger(bytes))
        throw new ContentDamagedError(
          claim.hash,
          where,
          `the claim ${JSON.stringify(claim)} is not one this driver wrote`,
        );
      const cached = this.payloads?.get(claim.hash);
      if (cached?.byteLength === bytes)
        return { metadata: { encoding: encoder.encode(JSON_ENCODING) }, data: cached };
      const text = await joinJson(claim.hash, (h) => this.content.get(h), where, { maxChars: bytes });
      const data = encoder.encode(text);
      if (data.byteLength !== bytes)
        throw new ContentDamagedError(
          claim.hash,
          where,
          `its pieces join to ${data.byteLength} bytes, not the ${bytes} stored`,
        );
      this.payloads?.set(claim.hash, data);
      return { metadata: { encoding: encoder.encode(JSON_ENCODING) }, data };
    } catch (err) {
      const e = atSite(err, step === undefined ? {} : { step });
      if (
        this.unresolved === 'throw' ||
        !(e instanceof ContentMissingError || e instanceof ContentDamagedError)
      )
        throw e;
      const u: UnresolvedContent = {
        code: e instanceof ContentDamagedError ? 'CONTENT_DAMAGED' : 'CONTENT_MISSING',
        hash: e.hash,
        store: e.store,
        ...(e instanceof ContentDamagedError ? { problem: e.problem } : {}),
        ...(step !== undefined ? { step } : {}),
      };
      return {
        metadata: { encoding: encoder.encode(JSON_ENCODING) },
        data: encoder.encode(JSON.stringify({ [UNRESOLVED_CONTENT]: u })),
      };
    }
  }
}
