/**
 * The data converter of Jukebox's workers and clients: Temporal's default payload conversion, with payloads past
 * `payloadSizeThreshold` in the run's content store (ContentDriver). Every worker and client of a run needs it,
 * on the same store: a plain client reading a run's result gets Temporal's ExternalStorageNotConfiguredError.
 */
import { type DataConverter, ExternalStorage } from '@temporalio/common';
import { type ContentStore, contentStoreFor } from '../../recorder/content';
import { ContentDriver, type ContentDriverOptions } from './contentDriver';

/**
 * Payloads from this size (bytes, as encoded) go to the content store; a claim costs about 220. A step's events
 * without payloads are about 1 KB, so with its input and result each under this a step costs at most ~2 KB of
 * history whatever the size of its conversation (docs/tape-store.md).
 */
export const DEFAULT_PAYLOAD_SIZE_THRESHOLD = 512;

export interface ContentOptions extends Omit<ContentDriverOptions, 'unresolved'> {
  /** Default: the store beside the tapes (contentStoreFor: `JUKEBOX_CONTENT_DIR`, else the tape store's). */
  store?: ContentStore;
  /** Default DEFAULT_PAYLOAD_SIZE_THRESHOLD. */
  payloadSizeThreshold?: number;
}

export function jukeboxDataConverter(
  options: ContentOptions & { unresolved?: ContentDriverOptions['unresolved'] } = {},
  base: DataConverter = {},
): DataConverter & { externalStorage: ExternalStorage } {
  const { store, payloadSizeThreshold, ...driver } = options;
  return {
    ...base,
    externalStorage: new ExternalStorage({
      drivers: [new ContentDriver(store ?? contentStoreFor(), driver)],
      payloadSizeThreshold: payloadSizeThreshold ?? DEFAULT_PAYLOAD_SIZE_THRESHOLD,
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
