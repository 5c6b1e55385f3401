/**
 * Conversations as linked chains of content-addressed blobs. Each message is one canonical MessagePack blob,
 * and each prefix of a conversation is one node blob `[prev node | nil, message]`, so a request that resends
 * a growing history costs one reference to its newest node: the bytes a conversation adds per step are its new
 * messages and one node each, never its history again (FORMAT.md, "Conversations").
 */
import { BlobRef, blobRef } from './blobRef';
import type { TapeBlob } from './cursor';
import { TapeUsageError } from './errors';
import { DEFAULT_LIMITS } from './limits';
import { decodePayload, PayloadProblem } from './payload';
import { decodeCheckedPayload } from './payloadDecoder';
import type { Tape } from './reader';
import type { TapeWriter } from './writer';

/** Stores each message and each prefix node once; returns the head node, `null` for an empty conversation. */
export async function internMessages(
  writer: TapeWriter,
  messages: readonly unknown[],
  options: { step?: number } = {},
): Promise<BlobRef | null> {
  let head: BlobRef | null = null;
  for (const m of messages) {
    const message = await writer.putValue(m, options);
    head = await writer.putValue([head, message], options);
  }
  return head;
}

/**
 * Decodes a blob stored with MessagePack encoding (or returns the bytes of a raw one). The reader checked its
 * bytes against the tape's limits; a blob only a reader with raised limits accepted decodes the slower way.
 */
export function decodeBlob(blob: TapeBlob): unknown {
  if (blob.encoding !== 'msgpack') return blob.bytes;
  const value = decodeCheckedPayload(blob.bytes, DEFAULT_LIMITS);
  return value instanceof PayloadProblem ? decodePayload(blob.bytes) : value;
}

type Blobs = ReadonlyMap<string, TapeBlob>;

function blobValue(blobs: Blobs, ref: BlobRef | string, what: string, memo?: Map<string, unknown>): unknown {
  const hash = blobRef(ref).hash;
  if (memo?.has(hash)) return memo.get(hash);
  const blob = blobs.get(hash);
  if (!blob) throw new TapeUsageError(`${what} blob ${hash} is not in this tape`);
  if (blob.bytes.byteLength === 0 && blob.encoding === 'msgpack') {
    throw new TapeUsageError(`${what} blob ${hash} was read without its bytes (keepBlobs: false)`);
  }
  const value = decodeBlob(blob);
  memo?.set(hash, value);
  return value;
}

/**
 * What a payload field stands for: the decoded blob when it is a blob reference (`undefined` when the tape does
 * not hold that blob), else the field's own value (small values are stored inline).
 */
export function derefValue(source: Pick<Tape, 'blobs'> | Blobs, value: unknown): unknown {
  if (!(value instanceof BlobRef)) return value;
  const blobs = source instanceof Map ? source : (source as Pick<Tape, 'blobs'>).blobs;
  const blob = blobs.get(value.hash);
  return blob ? decodeBlob(blob) : undefined;
}

/** The two parts of a conversation node blob, or `undefined` when the value is not one. */
export function conversationNode(value: unknown): { prev: BlobRef | null; message: BlobRef } | undefined {
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [prev, message] = value;
  if (!(message instanceof BlobRef) || !(prev === null || prev instanceof BlobRef)) return undefined;
  return { prev, message };
}

/**
 * The messages of a conversation reference: a chain head (what the recorder writes), `null` for none, or a
 * list of message references (the layout of tapes written before chains; still read).
 */
export function resolveMessages(
  source: Pick<Tape, 'blobs'> | Blobs,
  conversation: BlobRef | string | readonly (BlobRef | string)[] | null | undefined,
  /**
   * Decoded messages by blob hash, shared across calls: the requests of one conversation then hold the very
   * same message objects, so a reader comparing step after step can skip what it already compared.
   */
  memo?: Map<string, unknown>,
): unknown[] {
  const blobs = source instanceof Map ? source : (source as Pick<Tape, 'blobs'>).blobs;
  if (conversation === null || conversation === undefined) return [];
  if (Array.isArray(conversation)) return conversation.map((r) => blobValue(blobs, r, 'message', memo));
  const resolved = memo ? resolvedChains(memo) : undefined;
  const out: unknown[] = [];
  let prefix: unknown[] = [];
  // A node can only reference blobs stored before it, so chains cannot cycle; the blob count bounds the walk.
  let node: BlobRef | string | null = conversation as BlobRef | string;
  while (node !== null) {
    const known = resolved?.get(blobRef(node).hash);
    if (known) {
      // The conversation as an earlier step sent it: only the messages added since are decoded.
      prefix = known;
      break;
    }
    if (out.length > blobs.size)
      throw new TapeUsageError('conversation chain is longer than the tape has blobs');
    const parts = conversationNode(blobValue(blobs, node, 'conversation node'));
    if (!parts)
      throw new TapeUsageError(
        `blob ${blobRef(node).hash} is not a conversation node ([prev | nil, message reference])`,
      );
    out.push(blobValue(blobs, parts.message, 'message', memo));
    node = parts.prev;
  }
  const messages = prefix.concat(out.reverse());
  if (!resolved) return messages;
  resolved.set(blobRef(conversation as BlobRef | string).hash, messages);
  return messages.slice();
}

const chainMemos = new WeakMap<Map<string, unknown>, Map<string, unknown[]>>();

/** The messages of each conversation head resolved with a memo, so a later step walks only its new nodes. */
function resolvedChains(memo: Map<string, unknown>): Map<string, unknown[]> {
  let chains = chainMemos.get(memo);
  if (!chains) {
    chains = new Map();
    chainMemos.set(memo, chains);
  }
  return chains;
}
