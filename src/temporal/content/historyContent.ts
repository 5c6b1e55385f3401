/**
 * The blobs a workflow history refers to: every claim in it (a payload Jukebox's driver moved to the content
 * store) resolved, and each blob read on the way kept, so a `.jbxb` bundle can carry them and replay anywhere.
 */
import type { Payload } from '@temporalio/common';
import { StorageDriverClaim } from '@temporalio/common';
import { ContentMissingError, type ContentStore } from '../../recorder/content';
import { ContentDriver } from './contentDriver';
import { claimOf } from './historyPayloads';

/** Every payload in a (decoded) history message, wherever it sits in its events. */
function* payloadsIn(value: unknown, depth = 0): Generator<Payload> {
  if (value === null || typeof value !== 'object' || depth > 32 || value instanceof Uint8Array) return;
  if (Array.isArray(value)) {
    for (const v of value) yield* payloadsIn(v, depth + 1);
    return;
  }
  const o = value as Record<string, unknown>;
  if (o.metadata && typeof o.metadata === 'object' && o.data instanceof Uint8Array) {
    yield o as Payload;
    return;
  }
  for (const v of Object.values(o)) yield* payloadsIn(v, depth + 1);
}

/**
 * The blobs (hash → bytes) the claims in `histories` need, read from `content`; `missing`: the claims whose
 * blobs the store does not hold (a bundle without them still replays offline, not with Temporal's replayer).
 */
export async function contentOfHistories(
  histories: readonly unknown[],
  content: ContentStore,
): Promise<{ blobs: Map<string, Uint8Array>; missing: string[] }> {
  const blobs = new Map<string, Uint8Array>();
  const keeping: ContentStore = {
    location: content.location,
    put: (b) => content.put(b),
    async get(hash) {
      const bytes = blobs.get(hash) ?? (await content.get(hash));
      blobs.set(hash, bytes);
      return bytes;
    },
    close: async () => {},
  };
  const driver = new ContentDriver(keeping);
  const seen = new Set<string>();
  const missing: string[] = [];
  for (const history of histories)
    for (const payload of payloadsIn(history)) {
      const claim = claimOf(payload);
      if (!claim || seen.has(claim.hash!)) continue;
      seen.add(claim.hash!);
      try {
        await driver.retrieve({}, [new StorageDriverClaim(claim)]);
      } catch (err) {
        if (!(err instanceof ContentMissingError)) throw err;
        missing.push(claim.hash!);
      }
    }
  return { blobs, missing };
}
