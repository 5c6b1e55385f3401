import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  costOf,
  DEFAULT_PRICE_TABLE,
  loadPriceBook,
  PriceBook,
  PriceTableInvalidError,
  UnknownModelPriceError,
} from '../../../src/llm/pricing';

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens });
const tableFile = (content: unknown) => {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'jbx-prices-')), 'prices.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
};

describe('the price table', () => {
  it('prices a call from the dated default table in USD per million tokens', () => {
    expect(DEFAULT_PRICE_TABLE.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(DEFAULT_PRICE_TABLE.source).toContain('as published by the vendor');
    // gpt-4o-mini: $0.15 in, $0.60 out per million.
    expect(
      costOf({ provider: 'openai', model: 'gpt-4o-mini', usage: usage(1_000_000, 1_000_000) }),
    ).toBeCloseTo(0.75, 12);
    // claude-sonnet-4-5: $3 in, $15 out per million.
    expect(
      costOf({ provider: 'anthropic', model: 'claude-sonnet-4-5', usage: usage(2000, 500) }),
    ).toBeCloseTo(0.0135, 12);
  });

  it('resolves dated snapshots the vendors answer with to their listed alias', () => {
    const book = new PriceBook(DEFAULT_PRICE_TABLE);
    expect(book.priceOf('openai', 'gpt-4o-mini-2024-07-18')).toEqual(book.priceOf('openai', 'gpt-4o-mini'));
    expect(book.priceOf('anthropic', 'claude-haiku-4-5-20251001')).toEqual(
      book.priceOf('anthropic', 'claude-haiku-4-5'),
    );
  });

  it('gives every model name this repo sends to the local model server a non-zero price', () => {
    const book = new PriceBook(DEFAULT_PRICE_TABLE);
    for (const [provider, model] of [
      ['openai', 'gpt-4o-mini'],
      ['openai', 'gpt-4.1'],
      ['openai', 'jukebox-scripted'],
      ['anthropic', 'claude-haiku-4-5'],
      ['anthropic', 'claude-sonnet-4-5'],
      ['anthropic', 'jukebox-scripted'],
    ] as const)
      expect(book.costOf({ provider, model, usage: usage(100, 100) })).toBeGreaterThan(0);
  });

  it('refuses an unknown model with a typed error instead of pricing it at zero', () => {
    const err = (() => {
      try {
        costOf({ provider: 'openai', model: 'gpt-imaginary', usage: usage(1, 1) });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UnknownModelPriceError);
    expect(err).toMatchObject({ code: 'UNKNOWN_MODEL_PRICE', nonRetryable: true, model: 'gpt-imaginary' });
    expect((err as Error).message).toContain('JUKEBOX_PRICE_TABLE');
    expect((err as Error).message).toContain('gpt-4o-mini');
    expect(() => costOf({ provider: 'mistral', model: 'x', usage: usage(1, 1) })).toThrow(
      UnknownModelPriceError,
    );
  });

  it('lays a JSON file named by JUKEBOX_PRICE_TABLE over the defaults', () => {
    const file = tableFile({
      source: 'our negotiated rates',
      asOf: '2026-11-30',
      models: {
        openai: {
          'gpt-4o-mini': { inputPerMTok: 0.1, outputPerMTok: 0.4 },
          'my-finetune': { inputPerMTok: 1, outputPerMTok: 2 },
        },
      },
    });
    const book = loadPriceBook({ env: { JUKEBOX_PRICE_TABLE: file } });
    expect(book.costOf({ provider: 'openai', model: 'gpt-4o-mini', usage: usage(1e6, 1e6) })).toBeCloseTo(
      0.5,
      12,
    );
    expect(book.costOf({ provider: 'openai', model: 'my-finetune', usage: usage(1e6, 0) })).toBeCloseTo(
      1,
      12,
    );
    // Untouched defaults stay.
    expect(book.priceOf('anthropic', 'claude-haiku-4-5')).toEqual({ inputPerMTok: 1, outputPerMTok: 5 });
    expect(book.table.source).toContain('our negotiated rates');
    const only = loadPriceBook({ file, replaceDefaults: true });
    expect(() => only.priceOf('anthropic', 'claude-haiku-4-5')).toThrow(UnknownModelPriceError);
  });

  it.each([
    ['not JSON', '{ nope', 'cannot be read as JSON'],
    ['no date', { source: 's', models: {} }, 'asOf'],
    ['no source', { asOf: '2026-01-01', models: {} }, 'source'],
    [
      'a negative price',
      { source: 's', asOf: '2026-01-01', models: { openai: { m: { inputPerMTok: -1, outputPerMTok: 1 } } } },
      'models.openai["m"]',
    ],
    [
      'a missing price',
      { source: 's', asOf: '2026-01-01', models: { openai: { m: { inputPerMTok: 1 } } } },
      'non-negative numbers',
    ],
  ])('rejects a price table file with %s', (_, content, says) => {
    const file = tableFile(content);
    expect(() => loadPriceBook({ file })).toThrow(PriceTableInvalidError);
    expect(() => loadPriceBook({ file })).toThrow(says);
  });

  it('names a missing price table file', () => {
    expect(() => loadPriceBook({ file: '/nonexistent/prices.json' })).toThrow(/\/nonexistent\/prices\.json/);
  });
});
