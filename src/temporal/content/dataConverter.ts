/**
 * The data converter of Jukebox's workers and clients: Temporal's default payload conversion, with large payloads
 * in the run's content store (ContentDriver). Every worker and client of a run needs it, on the same store: a
 * plain client reading a run's result kept there gets Temporal's ExternalStorageNotConfiguredError.
 */
import { type DataConverter, ExternalStorage } from '@temporalio/common';
import { type ContentStore, contentStoreFor } from '../../recorder/content';
import { ContentDriver, type ContentDriverOptions } from './contentDriver';
import { referenceEncodingProblem } from './referenceEncoding';
import { StepPayloads } from './stepPayloads';

/**
 * A step's input or result from this size (bytes, as encoded) goes to the content store; a claim costs about 220.
 * A step's events without payloads are about 1 KB, so with its input and result each under this a step costs at
 * most ~2 KB of history whatever the size of its conversation (docs/tape-store.md).
 */
export const DEFAULT_PAYLOAD_SIZE_THRESHOLD = 512;
/** Any other payload (a memo, a query answer, a run's input or result) goes to the store from this size. */
export const DEFAULT_LARGE_PAYLOAD_THRESHOLD = 64 * 1024;

export interface ContentOptions extends Omit<ContentDriverOptions, 'unresolved'> {
  /** Default: the store beside the tapes (contentStoreFor: `JUKEBOX_CONTENT_DIR`, else the tape store's). */
  store?: ContentStore;
  /** Steps' inputs and results from this size go to the store; default DEFAULT_PAYLOAD_SIZE_THRESHOLD. */
  payloadSizeThreshold?: number;
  /** Every payload from this size goes to the store; default DEFAULT_LARGE_PAYLOAD_THRESHOLD. */
  largePayloadThreshold?: number;
}

export interface JukeboxDataConverter extends DataConverter {
  /** Absent when this install cannot encode claims (referenceEncoding.ts): payloads then stay in the history. */
  externalStorage?: ExternalStorage;
  /** The worker's record of its steps' results, which its activity interceptor fills. */
  stepPayloads?: StepPayloads;
}

let warned = false;

export function jukeboxDataConverter(
  options: ContentOptions & { unresolved?: ContentDriverOptions['unresolved'] } = {},
  base: DataConverter = {},
): JukeboxDataConverter {
  const broken = referenceEncodingProblem();
  if (broken) {
    // Once per process: the worker or client still works, with every payload in the history as before.
    if (!warned) process.emitWarning(`the content store is off: ${broken.message}`, { code: broken.code });
    warned = true;
    return base;
  }
  const { store, payloadSizeThreshold, largePayloadThreshold, ...driverOptions } = options;
  const small = payloadSizeThreshold ?? DEFAULT_PAYLOAD_SIZE_THRESHOLD;
  const large = Math.max(small, largePayloadThreshold ?? DEFAULT_LARGE_PAYLOAD_THRESHOLD);
  const driver = new ContentDriver(store ?? contentStoreFor(), driverOptions);
  // A JSON text's length in characters is at most its length in bytes: a result remembered by characters is
  // never one the selector would see past the large threshold in bytes.
  const stepPayloads = new StepPayloads(Math.max(0, small - 64), large, 512, (text) => driver.prestore(text));
  return {
    ...base,
    stepPayloads,
    externalStorage: new ExternalStorage({
      drivers: [driver],
      payloadSizeThreshold: small,
      driverSelector: (_context, payload) =>
        (payload.data?.byteLength ?? 0) >= large || stepPayloads.isStep(payload) ? driver : null,
    }),
  };
}

/** The content store a data converter made by jukeboxDataConverter writes to. */
export function contentStoreOf(converter: DataConverter): ContentStore | undefined {
  const d = converter.externalStorage?.drivers.find((x) => x instanceof ContentDriver) as
    | ContentDriver
    | undefined;
  return d?.content;
}
