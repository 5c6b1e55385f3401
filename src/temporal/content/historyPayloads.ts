/**
 * Reading payloads out of a fetched or stored workflow history, where those past the threshold are claims
 * (Temporal's ExternalStorageReference, JSON protobuf) rather than values: for tools that inspect histories
 * outside a worker (tests, `jbx show --events`, bundles).
 */
import type { Payload } from '@temporalio/common';
import { StorageDriverClaim } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { ContentStore } from '../../recorder/content';
import { CONTENT_DRIVER_NAME, ContentDriver } from './contentDriver';

const REFERENCE_TYPE = 'temporal.api.sdk.v1.ExternalStorageReference';
const decoder = new TextDecoder();

/** The claim a payload holds instead of its value, or undefined for an inline payload. */
export function claimOf(payload: Payload): Record<string, string> | undefined {
  const type = payload.metadata?.messageType;
  if (!type || decoder.decode(type) !== REFERENCE_TYPE || !payload.data) return undefined;
  const ref = JSON.parse(decoder.decode(payload.data)) as {
    driverName?: string;
    claimData?: Record<string, string>;
  };
  if (ref.driverName !== CONTENT_DRIVER_NAME || !ref.claimData) return undefined;
  return ref.claimData;
}

/** The payload itself: inline as it is, a claim of Jukebox's driver read back from `content`. */
export async function resolvePayload(payload: Payload, content: ContentStore): Promise<Payload> {
  const claim = claimOf(payload);
  if (!claim) return payload;
  const [resolved] = await new ContentDriver(content).retrieve({}, [new StorageDriverClaim(claim)]);
  return resolved!;
}

/** A JSON payload's value, resolved through `content` when it is a claim. */
export async function payloadJson(
  payload: Payload | null | undefined,
  content: ContentStore,
): Promise<unknown> {
  if (!payload) return undefined;
  const p = await resolvePayload(payload, content);
  return JSON.parse(decoder.decode(p.data ?? new Uint8Array()));
}

function isPayload(v: Record<string, unknown>): v is Payload & Record<string, unknown> {
  return v.data instanceof Uint8Array && typeof v.metadata === 'object' && v.metadata !== null;
}

/**
 * A stored history (protobuf bytes) with every claim of Jukebox's driver replaced by the payload it stands for,
 * read from `content`: a history that replays with no content store, as a bundle must for whoever receives it.
 * Bytes without claims come back as they are.
 */
export async function inlineHistoryContent(
  bytes: Uint8Array,
  content: ContentStore,
): Promise<{ bytes: Uint8Array; inlined: number }> {
  const history = temporal.api.history.v1.History.decode(bytes);
  let inlined = 0;
  const visit = async (node: unknown): Promise<void> => {
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return;
    const entries: [string | number, unknown][] = Array.isArray(node)
      ? node.map((v, i) => [i, v])
      : Object.entries(node);
    for (const [key, v] of entries) {
      if (typeof v !== 'object' || v === null || v instanceof Uint8Array) continue;
      const value = v as Record<string, unknown>;
      if (isPayload(value) && claimOf(value)) {
        (node as Record<string | number, unknown>)[key] = await resolvePayload(value, content);
        inlined++;
      } else await visit(value);
    }
  };
  await visit(history);
  if (inlined === 0) return { bytes, inlined };
  return { bytes: temporal.api.history.v1.History.encode(history).finish(), inlined };
}
