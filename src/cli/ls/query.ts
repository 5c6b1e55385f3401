/** The `jbx ls` filter flags (--outcome, --since, --workflow, --sort, --limit) as a catalog query; `jbx experiment` takes the same. */
import {
  CatalogQueryError,
  parseLimit,
  parseOutcomes,
  parseSince,
  parseSort,
  type TapeQuery,
} from '../../recorder/catalog';
import { usageError } from '../exitError';

export function queryFromFlags(flags: Record<string, unknown>, usage: string): TapeQuery {
  const q: TapeQuery = {};
  try {
    if (typeof flags.outcome === 'string') q.outcome = parseOutcomes(flags.outcome);
    if (typeof flags.since === 'string') q.since = parseSince(flags.since);
    if (typeof flags.workflow === 'string') q.workflow = flags.workflow;
    if (typeof flags.sort === 'string') q.sort = parseSort(flags.sort);
    if (typeof flags.limit === 'string') q.limit = parseLimit(flags.limit);
  } catch (err) {
    if (err instanceof CatalogQueryError) throw usageError(`${err.message}\nusage: ${usage}`);
    throw err;
  }
  return q;
}
