/**
 * Conversations as blob references: each message is stored once as a canonical MessagePack blob, so a request
 * frame that resends a growing history costs one 35-byte reference per old message instead of its content.
 */
import { type BlobRef, blobRef } from './blobRef';
import type { TapeBlob } from './cursor';
import { TapeUsageError } from './errors';
import { decodePayload } from './payload';
import type { Tape } from './reader';
import type { TapeWriter } from './writer';

export async function internMessages(
  writer: TapeWriter,
  messages: readonly unknown[],
  options: { step?: number } = {},
): Promise<BlobRef[]> {
  const refs: BlobRef[] = [];
  for (const m of messages) refs.push(await writer.putValue(m, options));
  return refs;
}

/** Decodes a blob stored with MessagePack encoding (or returns the bytes of a raw one). */
export function decodeBlob(blob: TapeBlob): unknown {
  return blob.encoding === 'msgpack' ? decodePayload(blob.bytes) : blob.bytes;
}

export function resolveMessages(
  source: Pick<Tape, 'blobs'> | ReadonlyMap<string, TapeBlob>,
  refs: readonly (BlobRef | string)[],
): unknown[] {
  const blobs = source instanceof Map ? source : (source as Pick<Tape, 'blobs'>).blobs;
  return refs.map((r) => {
    const hash = blobRef(r).hash;
    const blob = blobs.get(hash);
    if (!blob) throw new TapeUsageError(`message blob ${hash} is not in this tape`);
    if (blob.bytes.byteLength === 0 && blob.encoding === 'msgpack') {
      throw new TapeUsageError(`message blob ${hash} was read without its bytes (keepBlobs: false)`);
    }
    return decodeBlob(blob);
  });
}
