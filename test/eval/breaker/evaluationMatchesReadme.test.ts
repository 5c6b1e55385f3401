import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluationSet, TARGET_DETECTOR } from '../../../eval/breaker/conversations';
import {
  type EvaluatedSet,
  formatReport,
  type ObservedConversation,
  observeConversations,
  scoreEvaluation,
} from '../../../eval/breaker/evaluate';
import { HELD_OUT_TARGET_DETECTOR, heldOutSet, heldOutSetHash } from '../../../eval/breaker/heldOut';
import { DEFAULT_BREAKER_CONFIG } from '../../../src/breaker';
import { LocalModelEmbedder } from '../../../src/breaker/localEmbedder';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';

const ROOT = path.join(__dirname, '../../..');
const README = path.join(ROOT, 'README.md');

function readmeTable(): string {
  const text = readFileSync(README, 'utf8');
  const match = /<!-- breaker-eval:start -->\n([\s\S]*?)\n<!-- breaker-eval:end -->/.exec(text);
  if (!match) throw new Error('README.md has no breaker-eval table markers');
  return match[1]!;
}

describe('the breaker evaluation', () => {
  let server: ModelServer;
  let tuning: ObservedConversation[];
  let heldOut: ObservedConversation[];
  const sets = () =>
    [
      { set: 'tuning', observed: tuning, targets: TARGET_DETECTOR },
      { set: 'held-out', observed: heldOut, targets: HELD_OUT_TARGET_DETECTOR },
    ] satisfies EvaluatedSet[];

  beforeAll(async () => {
    // The project's installer (a marker check once installed): the embedding rows need the real model.
    const modelDir = execFileSync('bash', [path.join(ROOT, 'scripts/embedding-model.sh')], {
      encoding: 'utf8',
    }).trim();
    const embedder = new LocalModelEmbedder(modelDir);
    await embedder.load();
    server = await startModelServer({ script: { turns: [{ reply: { text: 'idle' } }] } });
    const options = { minChars: DEFAULT_BREAKER_CONFIG.minChars, embedder };
    tuning = await observeConversations(evaluationSet(), server, options);
    heldOut = await observeConversations(heldOutSet(), server, options);
  }, 300_000);
  afterAll(() => server?.close());

  it('has at least 20 looping and 20 healthy conversations in each set, every turn served by the model server and embedded', () => {
    for (const [set, observed] of [
      [evaluationSet(), tuning],
      [heldOutSet(), heldOut],
    ] as const) {
      expect(set.filter((c) => c.looping).length).toBeGreaterThanOrEqual(20);
      expect(set.filter((c) => !c.looping).length).toBeGreaterThanOrEqual(20);
      expect(set.filter((c) => !c.looping).every((c) => c.turns.length >= 16)).toBe(true);
      expect(observed.map((o) => o.turns.length)).toEqual(set.map((c) => c.turns.length));
      expect(observed.every((o) => o.turns.every((t) => t.spend.usd > 0))).toBe(true);
      expect(observed.flatMap((o) => o.turns).filter((t) => t.features.degraded)).toEqual([]);
    }
  });

  it('the held-out set shares no loop kind, healthy kind or message with the tuning set', () => {
    const kinds = new Set(evaluationSet().map((c) => c.kind));
    expect(heldOutSet().filter((c) => kinds.has(c.kind))).toEqual([]);
    const texts = new Set(evaluationSet().flatMap((c) => c.turns.map((t) => t.text)));
    expect(heldOutSet().flatMap((c) => c.turns.filter((t) => texts.has(t.text)))).toEqual([]);
  });

  it('produces exactly the precision/recall table the README states, tuning and held-out, n-grams and embeddings', () => {
    expect(readmeTable()).toBe(formatReport(sets(), { capUsd: 0.5 }));
  });

  it('states the held-out set by its content hash, so an edit of the set shows', () => {
    const stated = /The held-out set's SHA-256 \(`heldOutSetHash\(\)`[^)]*\) is\n`([0-9a-f]{64})`/.exec(
      readFileSync(README, 'utf8'),
    );
    expect(stated?.[1]).toBe('f398de6a793c6058db9136ff03b9c966cfc5e44add00225f13ab9d46ba8f2738');
    expect(heldOutSetHash()).toBe(stated?.[1]);
  });

  it('counts a trip inside another kind of loop against a detector, and gives "–" to one that never tripped', () => {
    const rows = scoreEvaluation(heldOut, { capUsd: 0.5, code: { hits: 1000 } }, HELD_OUT_TARGET_DETECTOR);
    const semantic = rows.find((r) => r.detector === 'semantic-repeat')!;
    expect([semantic.truePositives, semantic.falsePositives, semantic.otherLoops]).toEqual([5, 2, 8]);
    expect(semantic.precision).toBe(5 / 15);
    const code = rows.find((r) => r.detector === 'code-repeat')!;
    expect(code).toEqual({
      detector: 'code-repeat',
      targets: 5,
      truePositives: 0,
      falsePositives: 0,
      otherLoops: 0,
      precision: null,
      recall: 0,
      medianTurnsToTrip: null,
    });
    const report = formatReport([{ set: 'held-out', observed: heldOut, targets: HELD_OUT_TARGET_DETECTOR }], {
      capUsd: 0.5,
      code: { hits: 1000 },
    });
    expect(report.split('\n')).toContain(
      '| held-out | embeddings | code-repeat | 5 | 0 | 0 | 0 | – | 0.00 | – |',
    );
  });

  it('depends on its thresholds: other semantic thresholds change the figures', () => {
    expect(formatReport(sets(), { capUsd: 0.5, semantic: { threshold: 0.3 } })).not.toBe(readmeTable());
    expect(formatReport(sets(), { capUsd: 0.5, semantic: { embeddingThreshold: 0.9 } })).not.toBe(
      readmeTable(),
    );
  });
});
