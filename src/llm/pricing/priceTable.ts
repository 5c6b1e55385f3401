/** USD per million tokens, the unit both vendors publish their list prices in. */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
}

export interface PriceTable {
  /** Where the prices come from, in words a reader can check. */
  source: string;
  /** The date the prices were taken (YYYY-MM-DD). */
  asOf: string;
  /** provider -> model -> price. Providers are the LlmRequest providers plus `local` for documentation. */
  models: Record<string, Record<string, ModelPrice>>;
}

/**
 * Standard (non-batch, non-cached) list prices. Taken without network access, from the vendors' published
 * price pages as known on the date below; check https://openai.com/api/pricing and
 * https://www.anthropic.com/pricing before relying on them for billing.
 *
 * The local model server echoes whatever model name it is asked for, so runs against it are priced by these
 * same entries (the repo's agents ask for gpt-4o-mini, gpt-4.1, claude-haiku-4-5, claude-sonnet-4-5); the
 * `jukebox-*` names are the scripted models of the breaker evaluation, priced explicitly (like gpt-4o-mini /
 * claude-haiku-4-5) so that local runs show a non-zero cost.
 */
export const DEFAULT_PRICE_TABLE: PriceTable = {
  source:
    'OpenAI and Anthropic API pricing pages, as published by the vendor, list prices known as of 2025-10-15',
  asOf: '2025-10-15',
  models: {
    openai: {
      'gpt-5': { inputPerMTok: 1.25, outputPerMTok: 10 },
      'gpt-5-mini': { inputPerMTok: 0.25, outputPerMTok: 2 },
      'gpt-5-nano': { inputPerMTok: 0.05, outputPerMTok: 0.4 },
      'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
      'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
      'gpt-4.1-nano': { inputPerMTok: 0.1, outputPerMTok: 0.4 },
      'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
      'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
      o3: { inputPerMTok: 2, outputPerMTok: 8 },
      'o4-mini': { inputPerMTok: 1.1, outputPerMTok: 4.4 },
      'text-embedding-3-small': { inputPerMTok: 0.02, outputPerMTok: 0 },
      'text-embedding-3-large': { inputPerMTok: 0.13, outputPerMTok: 0 },
      // Local model server names (scripted, not a vendor model): priced like gpt-4o-mini.
      'jukebox-scripted': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
    },
    anthropic: {
      'claude-opus-4-1': { inputPerMTok: 15, outputPerMTok: 75 },
      'claude-opus-4': { inputPerMTok: 15, outputPerMTok: 75 },
      'claude-sonnet-4-5': { inputPerMTok: 3, outputPerMTok: 15 },
      'claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15 },
      'claude-3-7-sonnet': { inputPerMTok: 3, outputPerMTok: 15 },
      'claude-haiku-4-5': { inputPerMTok: 1, outputPerMTok: 5 },
      'claude-3-5-haiku': { inputPerMTok: 0.8, outputPerMTok: 4 },
      // Local model server name: priced like claude-haiku-4-5.
      'jukebox-scripted': { inputPerMTok: 1, outputPerMTok: 5 },
    },
  },
};
