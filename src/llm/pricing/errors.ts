import { crossRealmError, JukeboxError } from '../../errors';

/** A model with no entry in the price table: spend cannot be counted, so a cost cap cannot be enforced. */
export class UnknownModelPriceError extends JukeboxError {
  constructor(
    readonly provider: string,
    readonly model: string,
    readonly known: readonly string[],
    readonly tableSource: string,
  ) {
    super(
      'UNKNOWN_MODEL_PRICE',
      `No price for ${provider} model "${model}" in the price table (${tableSource}). Known ${provider} models: ${
        known.length ? known.join(', ') : '(none)'
      }. Add it to a JSON price table and point JUKEBOX_PRICE_TABLE (or the priceTable option) at that file; ` +
        'Jukebox never treats an unpriced model as free.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('UnknownModelPriceError', UnknownModelPriceError);

/** A price table file that is missing, not JSON, or holds a price that is not a non-negative number. */
export class PriceTableInvalidError extends JukeboxError {
  constructor(
    readonly source: string,
    readonly problem: string,
    cause?: unknown,
  ) {
    super(
      'PRICE_TABLE_INVALID',
      `The price table ${source} ${problem}. Expected JSON like {"source": "...", "asOf": "YYYY-MM-DD", "models": {"openai": {"gpt-4o-mini": {"inputPerMTok": 0.15, "outputPerMTok": 0.6}}}}.`,
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('PriceTableInvalidError', PriceTableInvalidError);
