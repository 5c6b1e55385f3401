/**
 * Reading payloads out of a fetched or stored workflow history, where those past the threshold are claims
 * (Temporal's ExternalStorageReference, JSON protobuf) rather than values: for tools that inspect histories
 * outside a worker (tests, `jbx show --events`, bundles).
 */
import type { Payload } from '@temporalio/common';
import { StorageDriverClaim } from '@temporalio/common';
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
