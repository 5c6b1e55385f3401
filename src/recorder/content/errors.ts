import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';

/** Where a blob was needed, for messages: a step's input or result, a run's input, a client's read. */
export interface ContentSite {
  /** The agent step whose payload held the reference, when known. */
  step?: number;
  /** What the payload was, e.g. `the input of step 12` or `the run's result`. */
  what?: string;
}

function siteText(site: ContentSite): string {
  if (site.what) return site.what;
  if (site.step !== undefined) return `a payload of step ${site.step}`;
  return 'a payload';
}

/**
 * A payload's content address names a blob the run's content store does not hold. Retryable: a worker pointed
 * at the wrong store (another JUKEBOX_TAPE_DIR or JUKEBOX_TAPE_STORE) fails, one pointed at the right one does not.
 */
export class ContentMissingError extends JukeboxError {
  readonly hash: string;
  readonly store: string;
  readonly step: number | undefined;
  constructor(hash: string, store: string, site: ContentSite = {}, cause?: unknown) {
    super(
      'CONTENT_MISSING',
      `${siteText(site)} refers to blob ${hash}, which the content store ${store} does not hold; every worker and client of a run must use the same store (JUKEBOX_TAPE_DIR, or JUKEBOX_TAPE_STORE=s3://... for several hosts)`,
      { cause, nonRetryable: false },
    );
    this.hash = hash;
    this.store = store;
    this.step = site.step;
  }
}
crossRealmError('ContentMissingError', ContentMissingError);

/** A blob's bytes do not hash to its name (or a stored payload does not reassemble): nothing is repaired. */
export class ContentDamagedError extends JukeboxError {
  readonly hash: string;
  readonly store: string;
  readonly step: number | undefined;
  readonly problem: string;
  constructor(hash: string, store: string, problem: string, site: ContentSite = {}) {
    super(
      'CONTENT_DAMAGED',
      `${siteText(site)} refers to blob ${hash} in the content store ${store}, which is damaged: ${problem}; the blob cannot be trusted, restore it from a backup of the store`,
      { nonRetryable: true },
    );
    this.hash = hash;
    this.store = store;
    this.step = site.step;
    this.problem = problem;
  }
}
crossRealmError('ContentDamagedError', ContentDamagedError);

/** The same error with the step and payload it was met in. */
export function atSite(err: unknown, site: ContentSite): unknown {
  if (err instanceof ContentMissingError)
    return new ContentMissingError(err.hash, err.store, site, err.cause);
  if (err instanceof ContentDamagedError)
    return new ContentDamagedError(err.hash, err.store, err.problem, site);
  return err;
}
