/**
 * What a worker's content driver hands on when it cannot resolve a payload's reference (a blob missing from the
 * store, or damaged): a value that says so, instead of a workflow task that fails and retries forever. The
 * workflow and the activity interceptor turn it into ContentMissingError / ContentDamagedError naming the step.
 * Pure and free of Node APIs: the workflow bundle imports it.
 */
import { ContentDamagedError, ContentMissingError, type ContentSite } from '../../recorder/content/errors';

export const UNRESOLVED_CONTENT = 'jukebox.unresolvedContent';

export interface UnresolvedContent {
  code: 'CONTENT_MISSING' | 'CONTENT_DAMAGED';
  hash: string;
  store: string;
  /** What is wrong with a damaged blob. */
  problem?: string;
  /** The step the payload belonged to, when the payload said. */
  step?: number;
}

/** The unresolved reference `value` stands for, or undefined for an ordinary value. */
export function unresolvedContentOf(value: unknown): UnresolvedContent | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const u = (value as Record<string, unknown>)[UNRESOLVED_CONTENT] as UnresolvedContent | undefined;
  return u && typeof u === 'object' && typeof u.hash === 'string' ? u : undefined;
}

export function unresolvedContentError(
  u: UnresolvedContent,
  site: ContentSite = {},
): ContentMissingError | ContentDamagedError {
  const at = { ...(u.step !== undefined ? { step: u.step } : {}), ...site };
  return u.code === 'CONTENT_DAMAGED'
    ? new ContentDamagedError(u.hash, u.store, u.problem ?? 'its bytes do not match its name', at)
    : new ContentMissingError(u.hash, u.store, at);
}

/** Throws the content error `value` stands for, if it stands for one; returns it untouched otherwise. */
export function resolvedOrThrow<T>(value: T, site: ContentSite): T {
  const u = unresolvedContentOf(value);
  if (u) throw unresolvedContentError(u, site);
  return value;
}
