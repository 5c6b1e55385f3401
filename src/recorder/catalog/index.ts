/**
 * The catalog of recordings: every tape in a folder as a typed row (outcome, start, steps, cost, workflow),
 * with filters, order and limit, kept fast on many tapes by an index file that follows the tapes' changes.
 * `jbx ls` prints it; anything else that lists recordings should read it here.
 */
export { CATALOG_INDEX_FILE } from './catalogIndex';
export { CatalogQueryError } from './errors';
export {
  applyQuery,
  OUTCOME_FILTERS,
  type OutcomeFilter,
  parseLimit,
  parseOutcomes,
  parseSince,
  parseSort,
  SORT_KEYS,
  type SortKey,
  type TapeQuery,
} from './query';
export {
  type CatalogListing,
  catalogDirFromEnv,
  listTapes,
  TapeCatalog,
  type TapeCatalogOptions,
} from './tapeCatalog';
export { rowFromSummary, type TapeOutcome, type TapeRow } from './tapeRow';
