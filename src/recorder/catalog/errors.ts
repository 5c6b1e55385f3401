import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';

/** A listing filter that cannot be applied (an unknown outcome or sort key, a date that does not parse). */
export class CatalogQueryError extends JukeboxError {
  constructor(message: string) {
    super('CATALOG_QUERY_INVALID', message, { nonRetryable: true });
  }
}
crossRealmError('CatalogQueryError', CatalogQueryError);
