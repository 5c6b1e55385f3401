import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  defineSignal,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { StepActivities } from '../activities/stepActivities';
import { readToolStepResult } from '../agent/toolStepResult';
import type { BreakerActivities } from '../breaker/activities';
import type { BreakerConfigInput } from '../breaker/config';
import { BreakerTrippedError } from '../breaker/errors';
import { LoopBreaker, type TrackSnapshot } from '../breaker/loopBreaker';
import { type BreakerDecision, breakerCloseSignal, breakerStatusQuery } from '../breaker/signals';
import type { BreakerTrip } from '../breaker/trip';
import { toApplicationFailure } from '../errors/applicationFailure';
import type { ChatMessage, Provider, ToolSpec } from '../llm/types';
import type { RecorderActivities } from '../recorder/activities';
import { boothSaga } from './boothSaga';
import { type AgentRunOptions, DEFAULT_RUN_OPTIONS } from './runOptions';

/** One agent of the group; its lane of messages and model calls is the breaker's track. */
export interface GroupTrack {
  name: string;
  provider: Provider;
  model: string;
  system?: string;
  tools?: ToolSpec[];
}

export interface AgentGroupInput {
  tracks: GroupTrack[];
  /** The first message, delivered to the first track. */
  opening: string;
  /** Model turns in all (tool-calling turns included) before the group stops. */
  maxTurns: number;
  /** A reply containing this word ends the conversation. Default "DONE". */
  stopWord?: string;
  breaker: BreakerConfigInput;
}

export interface GroupMessage {
  from: string;
  to: string;
  text: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
}

export interface AgentGroupResult {
  turns: number;
  transcript: GroupMessage[];
  tracks: TrackSnapshot[];
  resumed: number;
  degraded: string[];
}

/** A message from outside the group (a human, another workflow) to one of its tracks. */
export const groupMessageSignal =
  defineSignal<[{ to: string; text: string; from?: string }]>('jukebox.group.message');

function tripOf(err: unknown): BreakerTrip | undefined {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  if (!(failure instanceof ApplicationFailure) || failure.type !== 'BreakerTrippedError') return undefined;
  const details = failure.details?.[0] as { trip?: BreakerTrip } | undefined;
  return details?.trip;
}

/**
 * Agents that talk to each other in one workflow, each on its own track, watched by the circuit breaker: every
 * message between agents and every tool call goes through the repetition detectors, every model step's spend
 * through the velocity detector and the per-track cost cap, and every streamed chunk through the cost cap inside
 * the llm step. A trip records a breaker.trip frame, then waits resumeWindowMs for a jukebox.breaker.close
 * signal; without one (or on "abort") the run fails with a non-retryable BreakerTrippedError.
 */
export async function agentGroupWorkflow(
  input: AgentGroupInput,
  options: AgentRunOptions = {},
): Promise<AgentGroupResult> {
  const o = { ...DEFAULT_RUN_OPTIONS, ...options };
  const retry = {
    maximumAttempts: o.maximumAttempts,
    initialInterval: o.initialRetryIntervalMs,
    backoffCoefficient: 2,
  };
  const steps = proxyActivities<StepActivities>({
    startToCloseTimeout: o.stepTimeoutMs,
    heartbeatTimeout: o.heartbeatTimeoutMs,
    retry,
  });
  const breakerSteps = proxyActivities<BreakerActivities>({ startToCloseTimeout: 60_000, retry });
  const recorder = proxyActivities<RecorderActivities>({ startToCloseTimeout: 60_000, retry });

  let started = 0;
  let decision: BreakerDecision | undefined;
  let openTrip: BreakerTrip | undefined;
  let trips = 0;
  let resumed = 0;
  let breaker: LoopBreaker | undefined;
  const inbox: { to: string; text: string; from: string }[] = [];
  setHandler(breakerCloseSignal, (d) => {
    decision = d;
  });
  setHandler(groupMessageSignal, (m) => {
    inbox.push({ to: m.to, text: m.text, from: m.from ?? 'outside' });
  });
  setHandler(breakerStatusQuery, () => ({
    open: openTrip !== undefined,
    ...(openTrip ? { trip: openTrip } : {}),
    trips,
    resumed,
    capUsd: breaker?.capUsd ?? Number.NaN,
    tracks: breaker?.snapshot() ?? [],
    degraded: breaker?.degraded ?? [],
  }));

  const recordOutcome = async (outcome: {
    status: 'completed' | 'failed' | 'cancelled';
    result?: unknown;
    error?: { name: string; message: string; code?: string };
  }) => {
    try {
      await CancellationScope.nonCancellable(() => recorder.recordOutcome({ step: started, ...outcome }));
    } catch (err) {
      log.warn('could not record the outcome on the tape', { error: String(err) });
    }
  };

  /** Opens the breaker; returns when a human resumed it, throws when nobody did (or they said abort). */
  const onTrip = async (trip: BreakerTrip, alreadyRecorded: boolean) => {
    trips++;
    openTrip = trip;
    log.warn('circuit breaker tripped', { detector: trip.detector, track: trip.track, reason: trip.reason });
    if (!alreadyRecorded) await breakerSteps.breakerRecordTrip({ step: started++, trip });
    decision = undefined;
    if (resumeWindowMs > 0) await condition(() => decision !== undefined, resumeWindowMs);
    const d = decision as BreakerDecision | undefined;
    decision = undefined;
    if (d?.decision === 'resume') {
      if (d.capUsd !== undefined) breaker!.setCap(d.capUsd);
      breaker!.clearWindow(trip.track);
      openTrip = undefined;
      resumed++;
      log.info('circuit breaker closed by signal', { track: trip.track, capUsd: breaker!.capUsd, by: d.by });
      return;
    }
    throw new BreakerTrippedError(trip);
  };

  let resumeWindowMs = 0;
  const booth = boothSaga(o);
  let unsettled = false;
  const transcript: GroupMessage[] = [];
  try {
    if (!input.tracks.length)
      throw ApplicationFailure.nonRetryable('agentGroupWorkflow needs at least one track', 'GroupInputError');
    // Every activity is a step of its own on the tape, the breaker's included.
    const preflight = await breakerSteps.breakerPreflight({
      step: started++,
      config: input.breaker,
      models: input.tracks.map((t) => ({ provider: t.provider, model: t.model })),
    });
    const config = preflight.config;
    resumeWindowMs = config.resumeWindowMs;
    breaker = new LoopBreaker(config);
    const conversations = new Map<string, ChatMessage[]>(input.tracks.map((t) => [t.name, []]));
    const deliver = (to: string, text: string) =>
      conversations.get(to)?.push({ role: 'user', content: text });
    deliver(input.tracks[0]!.name, input.opening);
    const stopWord = input.stopWord ?? 'DONE';
    let current = 0;
    let turns = 0;
    while (turns < input.maxTurns) {
      for (const m of inbox.splice(0)) deliver(m.to, `${m.from}: ${m.text}`);
      const track = input.tracks[current]!;
      const conversation = conversations.get(track.name)!;
      const price = preflight.prices[`${track.provider}/${track.model}`]!;
      const step = started++;
      const startMs = Date.now();
      let response: Awaited<ReturnType<StepActivities['llmStep']>>;
      try {
        response = await steps.llmStep({
          step,
          request: {
            provider: track.provider,
            model: track.model,
            ...(track.system ? { system: track.system } : {}),
            messages: conversation,
            ...(track.tools?.length ? { tools: track.tools } : {}),
          },
          budget: { track: track.name, spentUsd: breaker.spentUsd(track.name), capUsd: breaker.capUsd },
        });
      } catch (err) {
        const trip = tripOf(err);
        if (!trip) throw err;
        // Cut mid-stream: what streamed was already paid for, so it counts against the track.
        breaker.observeSpend(track.name, {
          startMs,
          endMs: Date.now(),
          tokens: 0,
          usd: trip.spendUsd - breaker.spentUsd(track.name),
        });
        await onTrip(trip, true);
        continue; // resumed: the same track takes its turn again under the new cap
      }
      turns++;
      const usd =
        (response.usage.inputTokens * price.inputPerMTok +
          response.usage.outputTokens * price.outputPerMTok) /
        1e6;
      const spendTrip = breaker.observeSpend(track.name, {
        startMs,
        endMs: Date.now(),
        tokens: response.usage.inputTokens + response.usage.outputTokens,
        usd,
      });
      conversation.push({
        role: 'assistant',
        content: response.text,
        ...(response.toolCalls.length ? { toolCalls: response.toolCalls } : {}),
      });
      const message = {
        text: response.text,
        toolCalls: response.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })),
      };
      const next = input.tracks[(current + 1) % input.tracks.length]!;
      transcript.push({ from: track.name, to: response.toolCalls.length ? 'tools' : next.name, ...message });
      const features = await breakerSteps.breakerFeatures({
        step: started++,
        message,
        minChars: config.minChars,
        embedder: config.embedder,
      });
      if (features.degraded)
        log.warn('circuit breaker detector degraded', { track: track.name, why: features.degraded });
      const trip = spendTrip ?? breaker.observeMessage(track.name, features);
      if (trip) await onTrip(trip, false);
      if (response.toolCalls.length) {
        for (const call of response.toolCalls) {
          const { output: result, booth: staged } = readToolStepResult(
            await steps.toolStep({ step: started++, name: call.name, args: call.arguments }),
          );
          if (staged) unsettled = true;
          conversation.push({
            role: 'tool',
            toolCallId: call.id,
            name: call.name,
            content: JSON.stringify(result),
          });
        }
        continue; // the same agent reads its tool results
      }
      if (response.text.includes(stopWord)) break;
      deliver(next.name, response.text);
      current = (current + 1) % input.tracks.length;
    }
    const result: AgentGroupResult = {
      turns,
      transcript,
      tracks: breaker.snapshot(),
      resumed,
      degraded: breaker.degraded,
    };
    // A group has no commit step: whatever its tools staged is discarded at the end (workflows/boothSaga.ts).
    if (unsettled && patched('jukebox.rollback-unsettled-staging')) await booth.discardUnsettled(started);
    await recordOutcome({ status: 'completed', result: { turns, resumed } });
    return result;
  } catch (err) {
    // A trip (or any failure) leaves nothing staged behind: the Shadow Booth discards it and records a rollback.
    await booth.discardAfterFailure(started, err);
    const e = err as { name?: string; message?: string };
    await recordOutcome({
      status: isCancellation(err) ? 'cancelled' : 'failed',
      error: {
        name: e?.name ?? 'Error',
        message: e?.message ?? String(err),
        ...(err instanceof BreakerTrippedError ? { code: err.code } : {}),
      },
    });
    if (err instanceof BreakerTrippedError) throw toApplicationFailure(err);
    throw err;
  }
}
