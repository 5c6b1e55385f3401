import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PriceTableInvalidError, UnknownModelPriceError } from './errors';
import { DEFAULT_PRICE_TABLE, type ModelPrice, type PriceTable } from './priceTable';

export interface PricedCall {
  provider: string;
  model: string;
  usage: { inputTokens: number; outputTokens: number };
}

// Vendors answer with dated snapshots (gpt-4o-mini-2024-07-18, claude-haiku-4-5-20251001) of a listed alias.
const SNAPSHOT_SUFFIX = /-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

/** Prices of one table, looked up by provider and model, dated snapshots resolved to their alias. */
export class PriceBook {
  constructor(readonly table: PriceTable) {}

  priceOf(provider: string, model: string): ModelPrice {
    const models = this.table.models[provider] ?? {};
    const price = models[model] ?? models[model.replace(SNAPSHOT_SUFFIX, '')];
    if (!price) throw new UnknownModelPriceError(provider, model, Object.keys(models), this.table.source);
    return price;
  }

  /** USD for one call's token usage; throws UnknownModelPriceError rather than ever answering 0 for "unknown". */
  costOf(call: PricedCall): number {
    const price = this.priceOf(call.provider, call.model);
    return (
      (call.usage.inputTokens * price.inputPerMTok + call.usage.outputTokens * price.outputPerMTok) / 1e6
    );
  }
}

function isPrice(v: unknown): v is ModelPrice {
  if (typeof v !== 'object' || v === null) return false;
  const p = v as Record<string, unknown>;
  const ok = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  return ok(p.inputPerMTok) && ok(p.outputPerMTok);
}

/** Checks a parsed table; an override may omit source/asOf only if it says nothing else either. */
export function validatePriceTable(value: unknown, source: string): PriceTable {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new PriceTableInvalidError(source, 'is not a JSON object');
  const t = value as Record<string, unknown>;
  if (typeof t.source !== 'string' || !t.source)
    throw new PriceTableInvalidError(source, 'has no "source" (say where the prices come from)');
  if (typeof t.asOf !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(t.asOf))
    throw new PriceTableInvalidError(source, 'has no "asOf" date as YYYY-MM-DD (say when prices were taken)');
  if (typeof t.models !== 'object' || t.models === null || Array.isArray(t.models))
    throw new PriceTableInvalidError(source, 'has no "models" object of provider -> model -> price');
  for (const [provider, models] of Object.entries(t.models as Record<string, unknown>)) {
    if (typeof models !== 'object' || models === null)
      throw new PriceTableInvalidError(source, `has models.${provider} that is not an object`);
    for (const [model, price] of Object.entries(models as Record<string, unknown>))
      if (!isPrice(price))
        throw new PriceTableInvalidError(
          source,
          `has models.${provider}["${model}"] without non-negative numbers inputPerMTok and outputPerMTok`,
        );
  }
  return value as PriceTable;
}

export interface LoadPriceBookOptions {
  /** A JSON price table; its models are laid over the default table's (same key: the file wins). */
  file?: string;
  /** Skip the default table and use only the file's prices. */
  replaceDefaults?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** The default table, overridden by `file` or else by the file `JUKEBOX_PRICE_TABLE` names. */
export function loadPriceBook(options: LoadPriceBookOptions = {}): PriceBook {
  const file = options.file ?? (options.env ?? process.env).JUKEBOX_PRICE_TABLE;
  if (!file) return new PriceBook(DEFAULT_PRICE_TABLE);
  const resolved = path.resolve(file);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(resolved, 'utf8'));
  } catch (err) {
    throw new PriceTableInvalidError(resolved, `cannot be read as JSON (${(err as Error).message})`, err);
  }
  const override = validatePriceTable(parsed, resolved);
  if (options.replaceDefaults) return new PriceBook(override);
  const models: PriceTable['models'] = {};
  for (const p of new Set([...Object.keys(DEFAULT_PRICE_TABLE.models), ...Object.keys(override.models)]))
    models[p] = { ...DEFAULT_PRICE_TABLE.models[p], ...override.models[p] };
  return new PriceBook({
    source: `${override.source} (${resolved}), over ${DEFAULT_PRICE_TABLE.source}`,
    asOf: override.asOf,
    models,
  });
}

let defaultBook: PriceBook | undefined;

/** USD for one call, priced by the process's price book (default table or JUKEBOX_PRICE_TABLE). */
export function costOf(call: PricedCall, book?: PriceBook): number {
  if (book) return book.costOf(call);
  defaultBook ??= loadPriceBook();
  return defaultBook.costOf(call);
}
