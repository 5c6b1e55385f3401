/**
 * Conversation interning with a memory. Every llm step resends the whole conversation, twice (its activity input
 * and its request), and interning it from scratch encodes and hashes every message and prefix node again: 5 ms
 * for a 41-message chat on this project's bench machine, most of what recording a step cost. The memory maps
 * (previous node, message as JSON) to the node already on the tape, so a resent prefix costs a JSON.stringify
 * and a lookup per message and only new messages are encoded, hashed and written.
 */
import type { BlobRef, TapeWriter } from './tape';

// Per writer: a reopened writer (another process appended, or it was closed) starts a fresh memory.
const memories = new WeakMap<TapeWriter, Map<string, BlobRef>>();

/**
 * Same result as internMessages (src/recorder/tape/messages.ts), which this must keep building alike. Messages reach the recorder from JSON payloads, so equal JSON means an equal
 * value and so equal canonical MessagePack; a message JSON cannot describe faithfully (binary data) is never
 * remembered and takes the full path.
 */
export async function internRemembered(
  writer: TapeWriter,
  messages: readonly unknown[],
  options: { step?: number } = {},
): Promise<BlobRef | null> {
  let memory = memories.get(writer);
  if (!memory) {
    memory = new Map();
    memories.set(writer, memory);
  }
  let head = null as BlobRef | null;
  for (const m of messages) {
    const json = faithfulJson(m);
    const key: string | undefined = json === undefined ? undefined : `${head?.hash ?? ''}\n${json}`;
    const known: BlobRef | undefined = key === undefined ? undefined : memory.get(key);
    if (known && writer.hasBlob(known.hash)) {
      head = known;
      continue;
    }
    // The node internMessages builds for one more message: the message blob, then [previous node, message].
    const message = await writer.putValue(m, options);
    const node = await writer.putValue([head, message], options);
    if (key !== undefined) memory.set(key, node);
    head = node;
  }
  return head;
}

function faithfulJson(value: unknown): string | undefined {
  let faithful = true;
  const json = JSON.stringify(value, (_k, v) => {
    if (
      v === undefined ||
      v instanceof Uint8Array ||
      typeof v === 'bigint' ||
      (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0)))
    )
      faithful = false;
    return v;
  });
  return faithful ? json : undefined;
}
