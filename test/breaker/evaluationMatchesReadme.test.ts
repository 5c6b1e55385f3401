import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluationSet } from '../../agents/breakerEval/conversations';
import {
  formatScores,
  type ObservedConversation,
  observeConversations,
  scoreEvaluation,
} from '../../agents/breakerEval/evaluate';
import { DEFAULT_BREAKER_CONFIG } from '../../breaker';
import { type ModelServer, startModelServer } from '../../modelserver';

const README = path.join(__dirname, '../../README.md');

function readmeTable(): string {
  const text = readFileSync(README, 'utf8');
  const match = /<!-- breaker-eval:start -->\n([\s\S]*?)\n<!-- breaker-eval:end -->/.exec(text);
  if (!match) throw new Error('README.md has no breaker-eval table markers');
  return match[1]!;
}

describe('the breaker evaluation', () => {
  let server: ModelServer;
  let observed: ObservedConversation[];
  const set = evaluationSet();

  beforeAll(async () => {
    server = await startModelServer({ script: { turns: [{ reply: { text: 'idle' } }] } });
    observed = await observeConversations(set, server, { minChars: DEFAULT_BREAKER_CONFIG.minChars });
  });
  afterAll(() => server?.close());

  it('has at least 20 looping and 20 healthy conversations, every turn served by the model server', () => {
    expect(set.filter((c) => c.looping).length).toBeGreaterThanOrEqual(20);
    expect(set.filter((c) => !c.looping).length).toBeGreaterThanOrEqual(20);
    expect(set.filter((c) => !c.looping).every((c) => c.turns.length >= 16)).toBe(true);
    expect(observed.map((o) => o.turns.length)).toEqual(set.map((c) => c.turns.length));
    expect(observed.every((o) => o.turns.every((t) => t.spend.usd > 0))).toBe(true);
  });

  it('produces exactly the precision/recall table the README states', () => {
    const rows = scoreEvaluation(observed, { capUsd: 0.5 });
    expect(readmeTable()).toBe(formatScores(rows));
  });

  it('depends on its thresholds: a stricter semantic threshold changes the figures', () => {
    const loose = scoreEvaluation(observed, { capUsd: 0.5, semantic: { threshold: 0.3 } });
    expect(formatScores(loose)).not.toBe(readmeTable());
  });
});
