import {
  ApplicationFailure,
  CancellationScope,
  defineSignal,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import { readToolStepResult } from '../../agent/toolStepResult';
import type { BreakerConfigInput } from '../../breaker/config';
import { BreakerTrippedError } from '../../breaker/errors';
import type { TrackSnapshot } from '../../breaker/loopBreaker';
import { toApplicationFailure } from '../../errors/applicationFailure';
import type { ChatMessage, Provider, ToolSpec } from '../../llm/types';
import type { BreakerActivities } from '../activities/breakerActivities';
import type { RecorderActivities } from '../activities/recorderActivities';
import type { StepActivities } from '../activities/stepActivities';
import { boothSaga } from './boothSaga';
import { checkedActivities } from './checkedActivities';
import { type AgentRunOptions, DEFAULT_RUN_OPTIONS } from './runOptions';
import { toolSteps } from './toolSteps';
import { WorkflowBreaker } from './workflowBreaker';

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
  const steps = checkedActivities(
    proxyActivities<StepActivities>({
      startToCloseTimeout: o.stepTimeoutMs,
      heartbeatTimeout: o.heartbeatTimeoutMs,
      retry,
    }),
  );
  // Tool steps with their tools' own timeouts and retry policies (src/temporal/workflow/toolSteps.ts).
  const tools = toolSteps(o);
  const breakerSteps = proxyActivities<BreakerActivities>({ startToCloseTimeout: 60_000, retry });
  const recorder = proxyActivities<RecorderActivities>({ startToCloseTimeout: 60_000, retry });

  let started = 0;
  const inbox: { to: string; text: string; from: string }[] = [];
  // Every activity is a step of its own on the tape, the breaker's trip record included.
  const guard = new WorkflowBreaker(async (trip) => {
    await breakerSteps.breakerRecordTrip({ step: started++, trip });
  });
  setHandler(groupMessageSignal, (m) => {
    inbox.push({ to: m.to, text: m.text, from: m.from ?? 'outside' });
  });

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
    const breaker = guard.start(config);
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
          budget: guard.budget(track.name),
        });
      } catch (err) {
        // Cut mid-stream: what streamed was already paid for, so it counts against the track.
        await guard.onStepFailure(err, track.name, startMs);
        continue; // resumed: the same track takes its turn again under the new cap
      }
      turns++;
      const usd =
        (response.usage.inputTokens * price.inputPerMTok +
          response.usage.outputTokens * price.outputPerMTok) /
        1e6;
      const spend = {
        startMs,
        endMs: Date.now(),
        outputTokens: response.usage.outputTokens,
        usd,
      };
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
      await guard.observeStep(track.name, spend, features);
      if (response.toolCalls.length) {
        for (const call of response.toolCalls) {
          const { output: result, booth: staged } = readToolStepResult(
            await tools.run({ step: started++, name: call.name, args: call.arguments }, undefined, false),
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
      resumed: guard.resumed,
      degraded: breaker.degraded,
    };
    // A group has no commit step: whatever its tools staged is discarded at the end (src/temporal/workflow/boothSaga.ts).
    if (unsettled && patched('jukebox.rollback-unsettled-staging')) await booth.discardUnsettled(started);
    await recordOutcome({ status: 'completed', result: { turns, resumed: guard.resumed } });
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
