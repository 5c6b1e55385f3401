/** The dated model price table (USD per million tokens), overridable by a JSON file, and costOf. */
export { PriceTableInvalidError, UnknownModelPriceError } from './errors';
export {
  costOf,
  type LoadPriceBookOptions,
  loadPriceBook,
  PriceBook,
  type PricedCall,
  validatePriceTable,
} from './priceBook';
export { DEFAULT_PRICE_TABLE, type ModelPrice, type PriceTable } from './priceTable';
