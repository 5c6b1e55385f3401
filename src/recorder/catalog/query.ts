/** Filters, order and limit over catalog rows: what `jbx ls --outcome/--since/--workflow/--sort/--limit` do. */
import { CatalogQueryError } from './errors';
import type { TapeRow } from './tapeRow';

export const OUTCOME_FILTERS = [
  'completed',
  'failed',
  'cancelled',
  // Ended by the server (the workers' sweeper seals their tapes): src/temporal/worker/runSweeper.ts.
  'terminated',
  'timed-out',
  'reset',
  'running',
  'tripped',
  'rolled-back',
  'damaged',
] as const;
export type OutcomeFilter = (typeof OUTCOME_FILTERS)[number];

export const SORT_KEYS = ['started', 'cost', 'steps'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface TapeQuery {
  /**
   * Keep runs with any of these outcomes; `tripped` matches runs whose breaker tripped, `rolled-back` runs whose
   * staging a refused or failed commit (or the agent) rolled back, whatever the run's status.
   */
  outcome?: OutcomeFilter | readonly OutcomeFilter[];
  /** Keep runs started at or after this time (ms since the epoch, or a Date). */
  since?: number | Date;
  /** Keep runs of this workflow type (the agent's name), exactly. */
  workflow?: string;
  /** Highest first (`cost`, `steps`) or newest first (`started`); without it, by file name. */
  sort?: SortKey;
  limit?: number;
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `--since` accepts an ISO date or date-time (`2026-12-01`, `2026-12-01T09:30Z`) or an age relative to `now`
 * (`90s`, `30m`, `2h`, `7d`, `1w`).
 */
export function parseSince(text: string, now = Date.now()): number {
  const rel = /^(\d+(?:\.\d+)?)\s*([smhdw])$/.exec(text.trim());
  if (rel) return now - Number(rel[1]) * UNITS[rel[2]!]!;
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text.trim())) {
    const ms = Date.parse(text.trim());
    if (!Number.isNaN(ms)) return ms;
  }
  throw new CatalogQueryError(
    `--since ${JSON.stringify(text)} is neither an ISO date (2026-12-01, 2026-12-01T09:30Z) nor an age (30m, 2h, 7d, 1w)`,
  );
}

export function parseOutcomes(text: string): OutcomeFilter[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = list.filter((o) => !(OUTCOME_FILTERS as readonly string[]).includes(o));
  if (!list.length || bad.length)
    throw new CatalogQueryError(
      `unknown outcome ${JSON.stringify(bad[0] ?? text)}; use one or more of ${OUTCOME_FILTERS.join(', ')} (comma-separated)`,
    );
  return list as OutcomeFilter[];
}

export function parseSort(text: string): SortKey {
  if (!(SORT_KEYS as readonly string[]).includes(text))
    throw new CatalogQueryError(
      `unknown sort key ${JSON.stringify(text)}; use one of ${SORT_KEYS.join(', ')}`,
    );
  return text as SortKey;
}

export function parseLimit(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text)))
    throw new CatalogQueryError(`--limit needs a positive integer, got ${JSON.stringify(text)}`);
  return Number(text);
}

function matchesOutcome(row: TapeRow, wanted: readonly OutcomeFilter[]): boolean {
  return wanted.some((o) =>
    o === 'tripped' ? row.tripped : o === 'rolled-back' ? row.rolledBack !== null : row.outcome === o,
  );
}

const byName = (a: TapeRow, b: TapeRow) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
// Unknown values (no price, no header) sort after every known one.
const desc = (x: number | null, y: number | null) =>
  (y ?? Number.NEGATIVE_INFINITY) - (x ?? Number.NEGATIVE_INFINITY);

export function applyQuery(rows: readonly TapeRow[], q: TapeQuery = {}): TapeRow[] {
  if (q.limit !== undefined && (!Number.isInteger(q.limit) || q.limit < 1))
    throw new CatalogQueryError(`limit must be a positive integer, got ${q.limit}`);
  const outcomes =
    q.outcome === undefined ? undefined : typeof q.outcome === 'string' ? [q.outcome] : q.outcome;
  const since = q.since instanceof Date ? q.since.getTime() : q.since;
  const out = rows.filter(
    (r) =>
      (!outcomes || matchesOutcome(r, outcomes)) &&
      (since === undefined || (r.startedMs !== null && r.startedMs >= since)) &&
      (q.workflow === undefined || r.workflow === q.workflow),
  );
  const sort = q.sort;
  out.sort(
    sort === 'cost'
      ? (a, b) => desc(a.cost, b.cost) || byName(a, b)
      : sort === 'steps'
        ? (a, b) => b.steps - a.steps || byName(a, b)
        : sort === 'started'
          ? (a, b) => desc(a.startedMs, b.startedMs) || byName(a, b)
          : byName,
  );
  return q.limit === undefined ? out : out.slice(0, q.limit);
}
