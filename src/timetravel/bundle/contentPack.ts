/**
 * The content part of a bundle (BUNDLE.md, "content"): every blob of the content store that the bundle's
 * histories refer to, so a Temporal replay of the bundle resolves its payload claims without the store of the
 * deployment that recorded it. Byte layout: records of [32 bytes: the blob's BLAKE3-256][u32 LE: length][the
 * blob's bytes], sorted by hash, nothing between or after them.
 */
import { contentHash } from '../../recorder/content/contentStore';
import { fromHex } from '../../recorder/tape/hash';
import { BundleCorruptError } from './errors';

const HEAD = 36;

export function encodeContentPack(blobs: ReadonlyMap<string, Uint8Array>): Uint8Array {
  const hashes = [...blobs.keys()].sort();
  const size = hashes.reduce((n, h) => n + HEAD + blobs.get(h)!.byteLength, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let o = 0;
  for (const h of hashes) {
    const bytes = blobs.get(h)!;
    out.set(fromHex(h), o);
    view.setUint32(o + 32, bytes.byteLength, true);
    out.set(bytes, o + HEAD);
    o += HEAD + bytes.byteLength;
  }
  return out;
}

/** Reads a content part back, checking every blob against its hash. */
export function decodeContentPack(data: Uint8Array, file: string): Map<string, Uint8Array> {
  const blobs = new Map<string, Uint8Array>();
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let o = 0;
  while (o < data.byteLength) {
    if (o + HEAD > data.byteLength)
      throw new BundleCorruptError(
        file,
        'content',
        `the content part ends inside a blob's head at byte ${o}`,
      );
    const length = view.getUint32(o + 32, true);
    if (o + HEAD + length > data.byteLength)
      throw new BundleCorruptError(
        file,
        'content',
        `a blob at byte ${o} runs past the end of the content part`,
      );
    const named = Buffer.from(data.subarray(o, o + 32)).toString('hex');
    const bytes = data.subarray(o + HEAD, o + HEAD + length);
    const actual = contentHash(bytes);
    if (actual !== named) throw new BundleCorruptError(file, 'content', `blob ${named} hashes to ${actual}`);
    blobs.set(named, bytes);
    o += HEAD + length;
  }
  return blobs;
}
