import {
  type BreakerConfig,
  type BreakerConfigInput,
  DETECTORS,
  resolveBreakerConfig,
} from '../../src/breaker/config';
import type { Embedder } from '../../src/breaker/embedder';
import { extractFeatures } from '../../src/breaker/extractFeatures';
import type { MessageFeatures } from '../../src/breaker/features';
import { LoopBreaker, type StepSpend } from '../../src/breaker/loopBreaker';
import type { DetectorName } from '../../src/breaker/trip';
import { LlmClient, localEndpoints } from '../../src/llm';
import { loadPriceBook, type PriceBook } from '../../src/llm/pricing';
import type { ModelScript } from '../../src/testing/modelserver';
import { type EvalConversation, TARGET_DETECTOR } from './conversations';

export const EVAL_MODEL = 'jukebox-scripted';

/** A conversation as a model script: one turn per agent message, served in order. */
export function conversationScript(c: EvalConversation): ModelScript {
  return {
    name: c.id,
    turns: c.turns.map((t, i) => ({
      id: `t${i}`,
      reply: {
        text: t.text,
        ...(t.toolCalls ? { toolCalls: t.toolCalls } : {}),
        usage: t.usage,
        chunkSize: 4096,
      },
    })),
  };
}

export interface ObservedTurn {
  track: string;
  features: MessageFeatures;
  spend: StepSpend;
}

export interface ObservedConversation {
  conversation: EvalConversation;
  turns: ObservedTurn[];
}

/**
 * Plays each conversation through the local model server with the real OpenAI client (streamed), and extracts
 * the breaker's features from what came back. The clock is the scripted step durations (what a real API would
 * take), since the local server answers in microseconds.
 */
export async function observeConversations(
  conversations: EvalConversation[],
  server: { url: string; loadScript(s: ModelScript): void },
  options: { minChars: number; priceBook?: PriceBook; embedder?: Embedder },
): Promise<ObservedConversation[]> {
  const llm = new LlmClient(localEndpoints(server.url));
  const book = options.priceBook ?? loadPriceBook();
  const out: ObservedConversation[] = [];
  for (const conversation of conversations) {
    server.loadScript(conversationScript(conversation));
    let clock = 0;
    const turns: ObservedTurn[] = [];
    for (const [i, turn] of conversation.turns.entries()) {
      const response = await llm.call({
        provider: 'openai',
        model: EVAL_MODEL,
        messages: [{ role: 'user', content: `${conversation.id} turn ${i}` }],
      });
      const features = await extractFeatures(
        { text: response.text, toolCalls: response.toolCalls },
        { minChars: options.minChars },
        options.embedder ? { embedder: options.embedder } : {},
      );
      const usd = book.costOf({ provider: 'openai', model: EVAL_MODEL, usage: response.usage });
      const startMs = clock;
      clock += turn.durationMs;
      turns.push({
        track: turn.track,
        features,
        spend: {
          startMs,
          endMs: clock,
          outputTokens: response.usage.outputTokens,
          usd,
        },
      });
    }
    out.push({ conversation, turns });
  }
  return out;
}

export interface Trip {
  detector: DetectorName;
  turn: number;
}

/** Runs a breaker over one observed conversation the way agentGroupWorkflow does; returns its first trip. */
export function firstTrip(observed: ObservedConversation, config: BreakerConfig): Trip | undefined {
  const breaker = new LoopBreaker(config);
  for (const [turn, t] of observed.turns.entries()) {
    const trip = breaker.observeSpend(t.track, t.spend) ?? breaker.observeMessage(t.track, t.features);
    if (trip) return { detector: trip.detector, turn };
  }
  return undefined;
}

export interface DetectorScore {
  detector: string;
  /** Looping conversations it was meant to catch (its target kinds); all loops for "overall". */
  targets: number;
  /** Target loops it tripped on, once the loop had begun. */
  truePositives: number;
  /** Trips on healthy conversations, or before a loop started. */
  falsePositives: number;
  /** Trips inside a loop of a kind another detector targets: not this detector's hit (never for "overall"). */
  otherLoops: number;
  /** Hits over all its trips; null when it never tripped. */
  precision: number | null;
  /** Target loops caught over target loops. */
  recall: number | null;
  /** Median turns from the loop's start to the trip, over the loops caught (how much the loop cost first). */
  medianTurnsToTrip: number | null;
}

function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const ratio = (a: number, b: number) => (b === 0 ? null : a / b);

function score(
  detector: string,
  observed: ObservedConversation[],
  config: BreakerConfig,
  targetKinds: Set<string> | undefined,
): DetectorScore {
  let targets = 0;
  let tp = 0;
  let fp = 0;
  let other = 0;
  const delays: number[] = [];
  for (const o of observed) {
    const c = o.conversation;
    const trip = firstTrip(o, config);
    const isTarget = c.looping && (!targetKinds || targetKinds.has(c.kind));
    if (isTarget) targets++;
    if (!trip) continue;
    const inLoop = c.looping && trip.turn >= (c.loopStartsAt ?? 0);
    if (!inLoop) fp++;
    else if (!isTarget) other++;
    else {
      tp++;
      delays.push(trip.turn - (c.loopStartsAt ?? 0));
    }
  }
  // A detector's hit is a trip inside a loop of its own kind: one that trips on another kind's loop (while
  // that kind's own detector is off) is not what it claims to detect, so it counts against its precision.
  return {
    detector,
    targets,
    truePositives: tp,
    falsePositives: fp,
    otherLoops: other,
    precision: ratio(tp, tp + fp + other),
    recall: ratio(tp, targets),
    medianTurnsToTrip: median(delays),
  };
}

/** The same observations as the n-gram detector sees them: embeddings dropped, so TF-IDF decides. */
export function withoutEmbeddings(observed: ObservedConversation[]): ObservedConversation[] {
  return observed.map((o) => ({
    ...o,
    turns: o.turns.map((t) => {
      const { embedding: _, ...features } = t.features;
      return { ...t, features };
    }),
  }));
}

/** Precision and recall of each detector alone (recall over the loops it targets) and of all together. */
export function scoreEvaluation(
  observed: ObservedConversation[],
  input: BreakerConfigInput,
  targets: Record<string, string> = TARGET_DETECTOR,
): DetectorScore[] {
  const base = resolveBreakerConfig(input);
  const rows: DetectorScore[] = [];
  for (const d of DETECTORS) {
    const kinds = new Set(
      Object.entries(targets)
        .filter(([, det]) => det === d)
        .map(([k]) => k),
    );
    if (!kinds.size) continue;
    rows.push(score(d, observed, { ...base, detectors: [d] }, kinds));
  }
  rows.push(score('overall', observed, base, undefined));
  return rows;
}

export interface EvaluatedSet {
  /** "tuning" (the set the thresholds were chosen on) or "held-out". */
  set: string;
  observed: ObservedConversation[];
  targets: Record<string, string>;
}

/**
 * The README table: each set scored twice, the semantic detector on character 3-gram TF-IDF and on the
 * sentence-embedding model (the other detectors do not use embeddings, so their rows repeat).
 */
export function formatReport(sets: EvaluatedSet[], input: BreakerConfigInput): string {
  const lines = [
    '| set | semantic via | detector | loops targeted | caught | false alarms | trips on other loops | precision | recall | median turns into the loop |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const s of sets)
    for (const [via, observed] of [
      ['n-grams', withoutEmbeddings(s.observed)],
      ['embeddings', s.observed],
    ] as const)
      for (const r of scoreEvaluation(observed, input, s.targets))
        lines.push(
          `| ${s.set} | ${via} | ${r.detector} | ${r.targets} | ${r.truePositives} | ${r.falsePositives} | ${r.otherLoops} | ${figure(r.precision)} | ${figure(r.recall)} | ${r.medianTurnsToTrip ?? '–'} |`,
        );
  return lines.join('\n');
}

export function formatScores(rows: DetectorScore[]): string {
  const lines = [
    '| detector | loops targeted | caught | false alarms | trips on other loops | precision | recall | median turns into the loop |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.detector} | ${r.targets} | ${r.truePositives} | ${r.falsePositives} | ${r.otherLoops} | ${figure(r.precision)} | ${figure(r.recall)} | ${r.medianTurnsToTrip ?? '–'} |`,
    );
  return lines.join('\n');
}

/** Two decimals, or "–" for a ratio with nothing to divide by (a detector that never tripped has no precision). */
function figure(x: number | null): string {
  return x === null ? '–' : x.toFixed(2);
}
