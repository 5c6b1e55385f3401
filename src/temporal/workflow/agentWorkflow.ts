import {
  allHandlersFinished,
  CancellationScope,
  ContinueAsNew,
  condition,
  continueAsNew,
  defineQuery,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { CommitReport, RollbackReport } from '../../agent/commit';
import type {
  AgentContext,
  AgentDefinition,
  AgentRunResult,
  StepSummary,
  ToolCallOptions,
} from '../../agent/context';
import { readToolStepResult, type ToolStepApprovals } from '../../agent/toolStepResult';
import { type BreakerConfig, resolveAgentBreakerConfig } from '../../breaker/config';
import type { FeatureRequest } from '../../breaker/featureSource';
import { toApplicationFailure } from '../../errors/applicationFailure';
import { JukeboxError } from '../../errors/JukeboxError';
import type { LlmRequest, LlmResponse } from '../../llm/types';
import type { Observation, RecordOutcomeInput } from '../../recorder/observations';
import { llmRequestForm, toolCallForm } from '../../timetravel/fork/requestDigest';
import type { BreakerActivities } from '../activities/breakerActivities';
import type { ForkActivities } from '../activities/forkActivities';
import type { RecorderActivities } from '../activities/recorderActivities';
import type { LlmStepResult, StepActivities } from '../activities/stepActivities';
import type { TapeSinks } from '../worker/tapeSinks';
import { ApprovalDesk } from './approvalDesk';
import { boothSaga } from './boothSaga';
import { carryError, reviveError } from './carriedErrors';
import { checkedActivities } from './checkedActivities';
import { type CarriedStep, Continuation } from './continuation';
import { forkedRun } from './forkedRun';
import { type AgentRunOptions, DEFAULT_RUN_OPTIONS, runKeyOf } from './runOptions';
import { approvedToolCall } from './toolApproval';
import { toolSteps } from './toolSteps';
import { WorkflowBreaker } from './workflowBreaker';

/** Steps finished so far, for clients that show progress while a run is going. */
export const progressQuery = defineQuery<StepSummary[]>('jukebox.progress');

function describeFailure(err: unknown): NonNullable<RecordOutcomeInput['error']> {
  // An activity failure's own message is generic ("Activity task failed"); the cause says what happened.
  const e = err as
    | { name?: string; message?: string; cause?: { message?: string; type?: string } }
    | undefined;
  const cause = e?.cause;
  const out: NonNullable<RecordOutcomeInput['error']> = {
    name: e?.name ?? 'Error',
    message: cause?.message ? `${e?.message ?? ''}: ${cause.message}` : (e?.message ?? String(err)),
  };
  const type = cause?.type ?? (e as { type?: string } | undefined)?.type;
  if (typeof type === 'string') out.type = type;
  if (err instanceof JukeboxError) out.code = err.code;
  return out;
}

function summarizeLlm(index: number, response: LlmResponse): StepSummary {
  const detail = response.toolCalls.length
    ? `calls ${response.toolCalls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join(', ')}`
    : `answers ${JSON.stringify(response.text.slice(0, 120))}`;
  return {
    index,
    kind: 'llm',
    name: response.model,
    detail,
    inputTokens: response.usage.inputTokens,
    outputTokens: response.usage.outputTokens,
  };
}

function breakerRequest(guard: WorkflowBreaker, watch: FeatureRequest): FeatureRequest {
  const pending = guard.pendingEmbeddings();
  return pending.length ? { ...watch, pendingEmbeddings: pending } : watch;
}

/**
 * Turns an agent into a Temporal workflow: the agent function is the workflow body, each `ctx.llm` / `ctx.tool`
 * is an activity, `ctx.random` / `ctx.now` are the workflow's deterministic random and clock.
 */
export function agentWorkflow<I, O>(agent: AgentDefinition<I, O>) {
  const workflow = async (input: I, options: AgentRunOptions = {}): Promise<AgentRunResult<O>> => {
    const o = { ...DEFAULT_RUN_OPTIONS, ...options };
    // A later segment of a run that continued as new names its run key on every activity input (continuation.ts).
    const runKey = runKeyOf(o);
    const activities = checkedActivities(
      proxyActivities<StepActivities>({
        startToCloseTimeout: o.stepTimeoutMs,
        heartbeatTimeout: o.heartbeatTimeoutMs,
        retry: {
          maximumAttempts: o.maximumAttempts,
          initialInterval: o.initialRetryIntervalMs,
          backoffCoefficient: 2,
        },
      }),
      runKey,
    );
    // Tool steps with their tools' own timeouts and retry policies; as local activities for tools the run marks
    // local (no heartbeat: a local activity cannot send one; retried by the worker within the workflow task).
    const tools = toolSteps(o);
    const localTools = new Set(o.localTools ?? []);
    // Local steps' tape frames are fsynced once per workflow task, by this barrier, which the worker runs after
    // the activation that issues the task's next non-local command and before that task completes: the history
    // never holds a local step's result before the tape holds it durably (docs/tape-store.md).
    const { jukeboxTape } = proxySinks<TapeSinks>();
    let localSinceBarrier = false;
    const barrier = () => {
      if (!localSinceBarrier) return;
      localSinceBarrier = false;
      jukeboxTape.barrier(runKey);
    };
    const recorderOptions = {
      startToCloseTimeout: 60_000,
      retry: {
        maximumAttempts: o.maximumAttempts,
        initialInterval: o.initialRetryIntervalMs,
        backoffCoefficient: 2,
      },
    };
    const recorder = checkedActivities(proxyActivities<RecorderActivities>(recorderOptions), runKey);
    // The same activity as a local one: sealing the tape is milliseconds of the worker's own I/O, and as a local
    // activity it runs inside the run's last workflow task, which then completes the workflow, instead of
    // costing an activity task and another workflow task. Its seal is fsynced before that task completes.
    const localRecorder = checkedActivities(
      proxyLocalActivities<RecorderActivities>(recorderOptions),
      runKey,
    );
    const steps: StepSummary[] = [];
    setHandler(progressQuery, () => steps);
    let started = 0;
    const info = workflowInfo();
    // Random and clock readings ride on the next activity's input: the workflow itself may do no I/O, and the
    // activity's recorder writes them to the tape before that step's frames.
    const observations: Observation[] = [];
    let observed = 0;
    const takeObservations = () => (observations.length ? { observations: observations.splice(0) } : {});
    const recordOutcome = async (outcome: Omit<RecordOutcomeInput, 'step'>) => {
      barrier();
      try {
        // Still runs when the workflow was cancelled: a cancelled run's tape is sealed too.
        await CancellationScope.nonCancellable(() => {
          const input = { step: started, ...outcome, ...takeObservations() };
          // Behind a patch: histories recorded before it hold the outcome as an activity task.
          return patched('jukebox.outcome-local-activity')
            ? localRecorder.recordOutcome(input)
            : recorder.recordOutcome(input);
        });
      } catch (err) {
        // The agent's own result or error outranks its recording; the tape stays unsealed but verifiable.
        log.warn('could not record the outcome on the tape', { error: String(err) });
      }
    };

    // Continue-as-new between steps when Temporal suggests it or a budget is reached (continuation.ts). Behind a
    // patch: histories recorded before it never continued, and must not start to on replay.
    const continuation = new Continuation(
      o.continued,
      o.continueAsNew,
      o.continueAsNew !== false && patched('jukebox.continue-as-new'),
    );
    /** A step of an earlier segment, answered again: a value, or the error the agent got then. */
    const answered = (a: CarriedStep): unknown => {
      if ('e' in a) throw reviveError(a.e);
      return 'v' in a ? a.v : undefined;
    };

    // The circuit breaker watches every run, one track named after the agent, unless the run or the agent says
    // `breaker: false`. Behind a patch: histories recorded before it have no breaker in them.
    const breakerOption = o.breaker !== undefined ? o.breaker : agent.breaker;
    let guard: WorkflowBreaker | undefined;
    let watch: FeatureRequest | undefined;
    if (breakerOption !== false && patched('jukebox.agent-breaker')) {
      let config: BreakerConfig;
      try {
        config = resolveAgentBreakerConfig(breakerOption);
      } catch (err) {
        // startAgent and defineAgent check this first; a client that skipped them gets the same typed error.
        throw err instanceof JukeboxError ? toApplicationFailure(err) : err;
      }
      const breakerSteps = checkedActivities(
        proxyActivities<BreakerActivities>({
          startToCloseTimeout: 60_000,
          retry: { maximumAttempts: o.maximumAttempts, initialInterval: o.initialRetryIntervalMs },
        }),
        runKey,
      );
      guard = new WorkflowBreaker(async (trip) => {
        const step = started++;
        continuation.record(step, { k: 'trip' });
        await breakerSteps.breakerRecordTrip({ step, trip });
      });
      guard.start(config);
      // A later segment goes on with the windows, spend and deferred embeddings the run had.
      if (o.continued?.breaker) guard.restoreState(o.continued.breaker);
      // A tool turn's embedding comes back with the next model step (WorkflowBreaker.pendingEmbeddings): the
      // detectors never compare a tool turn's own meaning, only later messages with it.
      watch = { minChars: config.minChars, embedder: config.embedder, deferToolTurnEmbeddings: true };
    }
    const track = agent.name;

    // A fork answers its steps before the fork point from the parent tape (src/timetravel/fork/forkedRun.ts); a run that is not
    // a fork gets pass-throughs. The run's input rides on its first step so the tape holds what replay needs.
    // Restoring the parent's world can take as long as a step; it heartbeats like one.
    const lineage = await forkedRun(
      o.fork,
      checkedActivities(
        proxyActivities<ForkActivities>({
          startToCloseTimeout: Math.max(60_000, o.stepTimeoutMs),
          heartbeatTimeout: o.heartbeatTimeoutMs,
        }),
        runKey,
      ),
      input,
      o.continued !== undefined,
    );

    // Where gates, tools and MCP calls wait for a person (its update, signal and query handlers issue no commands).
    const desk = new ApprovalDesk(info.taskQueue, runKey, o);
    if (o.fork && !o.continued) desk.inherit(lineage.approval, o.fork.parentTapeId);
    if (o.continued?.approvals) desk.restoreState(o.continued.approvals);
    const booth = boothSaga(o, desk);
    // Whether the booth may hold staged changes that neither ctx.commit nor ctx.rollback settled: any tool that ran
    // with the booth may have staged, and a fork starts from the parent's restored staging.
    let unsettled = o.fork !== undefined;

    // Between two steps, the run may continue as new: the step about to start never gets an answer (nor does any
    // step the agent starts after it), the agent stays suspended, and the run goes on in its next segment.
    let inFlight = 0;
    let continuing: ReturnType<Continuation['due']>;
    let requestContinue: (reason: NonNullable<ReturnType<Continuation['due']>>) => void = () => {};
    const continueRequested = new Promise<NonNullable<ReturnType<Continuation['due']>>>((resolve) => {
      requestContinue = resolve;
    });
    const suspended = new Promise<never>(() => {});
    const atBoundary = (): boolean => {
      if (continuing) return true;
      // A fork continues only once its inherited steps are behind it; never with a step or a handler running.
      if (inFlight > 0 || (o.fork && started < o.fork.forkStep && !o.continued) || !allHandlersFinished())
        return false;
      continuing = continuation.due(started);
      if (continuing) requestContinue(continuing);
      return continuing !== undefined;
    };
    // The step layers below are plain functions chaining `then`s, not async ones: the workflow sandbox captures a
    // stack trace for every promise created in it (Temporal's stack-trace query), an async layer costs one for
    // itself and one per await, and those captures were a third of the workflow thread's extra CPU a step.
    const live = <T>(step: number, kind: CarriedStep['k'], run: () => Promise<T>): Promise<T> => {
      inFlight++;
      const failed = (err: unknown): never => {
        inFlight--;
        continuation.record(step, { k: kind, e: carryError(err) } as CarriedStep);
        throw err;
      };
      let running: Promise<T>;
      try {
        running = run();
      } catch (err) {
        return Promise.reject(err).catch(failed);
      }
      return running.then((value) => {
        inFlight--;
        continuation.record(step, { k: kind, v: value } as CarriedStep);
        return value;
      }, failed);
    };

    /** A random or clock reading: one an earlier segment made (on the tape already), or a fresh one. */
    const read = (kind: 'r' | 'c', fresh: () => number): number => {
      const seq = observed++;
      const carried = continuation.reading(kind);
      if (carried !== undefined) return carried;
      const value = fresh();
      observations.push(
        kind === 'r'
          ? { kind: 'random', seq, step: started, value }
          : { kind: 'clock', seq, step: started, nowMs: value },
      );
      continuation.recordReading(kind, value);
      return value;
    };

    /** Promise-returning and never throwing: a failure of any part is the step's rejection. */
    const attempt = <T>(f: () => Promise<T>): Promise<T> => {
      try {
        return f();
      } catch (err) {
        return Promise.reject(err);
      }
    };
    /** ctx.llm's step: `then`s rather than awaits, as the tool step's (see `live`). */
    const modelStep = (request: LlmRequest): Promise<LlmResponse> => {
      for (;;) {
        if (atBoundary()) return suspended;
        const step = started++;
        const sent = lineage.request(step, request);
        const carried = continuation.answer(step, 'llm');
        if (carried) {
          // The cost cap cut it short and a person resumed the run: the same call went out again.
          if ('resumed' in carried) continue;
          return attempt(async () => {
            const response = answered(carried) as LlmResponse;
            steps.push(summarizeLlm(step, response));
            // A breaker trip this answer caused was recorded as a step of its own.
            while (continuation.isCarriedTrip(started)) answered(continuation.answer(started++, 'trip')!);
            return response;
          });
        }
        const startMs = Date.now();
        inFlight++;
        let result: Promise<LlmStepResult>;
        try {
          const known = lineage.answer(step, llmRequestForm(sent)) as LlmResponse | undefined;
          result =
            known !== undefined && known !== null
              ? Promise.resolve(known)
              : activities.llmStep({
                  step,
                  request: sent,
                  ...lineage.stepInput(step),
                  ...takeObservations(),
                  ...(guard && watch
                    ? { budget: guard.budget(track), breaker: breakerRequest(guard, watch) }
                    : {}),
                });
        } catch (err) {
          result = Promise.reject(err);
        }
        return result.then(
          (answer) => {
            inFlight--;
            const { breaker: seen, ...response } = answer;
            continuation.record(step, { k: 'llm', v: response });
            steps.push(summarizeLlm(step, response));
            if (!guard || !seen) return response;
            return attempt(() =>
              guard.observeStep(
                track,
                { startMs, endMs: Date.now(), outputTokens: response.usage.outputTokens, usd: seen.usd },
                seen.features,
                { step, text: response.text, ...(seen.embedded ? { embedded: seen.embedded } : {}) },
              ),
            ).then(
              () => response,
              (err: unknown) => {
                // Nobody resumed the trip this answer caused: its record step is where the agent got the error.
                if (started > step + 1) continuation.record(started - 1, { k: 'trip', e: carryError(err) });
                throw err;
              },
            );
          },
          (err: unknown) => {
            inFlight--;
            if (!guard) {
              continuation.record(step, { k: 'llm', e: carryError(err) });
              throw err;
            }
            // The cost cap cut the stream: trip path; resumed with a new cap, the same call goes out again.
            return attempt(() => guard.onStepFailure(err, track, startMs)).then(
              () => {
                continuation.record(step, { k: 'llm', resumed: true });
                return modelStep(request);
              },
              (tripped: unknown) => {
                continuation.record(step, { k: 'llm', e: carryError(tripped) });
                throw tripped;
              },
            );
          },
        );
      }
    };

    const ctx: AgentContext = {
      get steps() {
        return started;
      },
      workflowId: info.workflowId,
      // The run's own id in every segment: its first one's.
      runId: runKey ?? info.runId,
      llm(request) {
        try {
          barrier();
        } catch (err) {
          return Promise.reject(err);
        }
        return modelStep(request);
      },
      tool<T>(name: string, args: Record<string, unknown>, callOptions?: ToolCallOptions): Promise<T> {
        if (atBoundary()) return suspended;
        const local = callOptions?.local ?? localTools.has(name);
        const step = started++;
        const carried = continuation.answer(step, 'tool');
        const runStep = (sent: Record<string, unknown>, approvals: ToolStepApprovals): Promise<unknown> => {
          const inherited = lineage.answer(step, toolCallForm(name, sent));
          if (inherited !== undefined && inherited !== null) return Promise.resolve(inherited);
          return tools.run(
            {
              step,
              name,
              args: sent,
              ...(approvals.tool || approvals.mcp ? { approvals } : {}),
              ...lineage.stepInput(step),
              ...takeObservations(),
            },
            callOptions,
            local,
          );
        };
        if (!carried) {
          if (local) localSinceBarrier = true;
          else barrier();
        }
        const settle = (answer: unknown): T => {
          const { output: result, booth: staged } = readToolStepResult(answer);
          if (staged) unsettled = true;
          steps.push({ index: step, kind: 'tool', name, detail: JSON.stringify(result).slice(0, 120) });
          return result as T;
        };
        if (carried) {
          try {
            return Promise.resolve(settle(answered(carried)));
          } catch (err) {
            return Promise.reject(err);
          }
        }
        return live(step, 'tool', () =>
          approvedToolCall(
            {
              desk,
              barrier,
              rollback: (at, reason) => {
                unsettled = false;
                return booth.rollback(at, reason, takeObservations());
              },
            },
            step,
            name,
            args,
            callOptions?.approval,
            runStep,
          ),
        ).then(settle);
      },
      random: () => read('r', () => lineage.observe('random', started) ?? Math.random()),
      now: () => read('c', () => lineage.observe('clock', started) ?? Date.now()),
      // The Shadow Booth's commit is one step made of several activities (src/temporal/workflow/boothSaga.ts).
      async commit(options) {
        if (atBoundary()) return suspended;
        const step = started++;
        unsettled = false;
        const carried = continuation.answer(step, 'commit');
        if (carried) return answered(carried) as CommitReport;
        barrier();
        return live(step, 'commit', () => booth.commit(step, options, takeObservations()));
      },
      async rollback(reason) {
        if (atBoundary()) return suspended;
        const step = started++;
        unsettled = false;
        const carried = continuation.answer(step, 'rollback');
        if (carried) return answered(carried) as RollbackReport;
        barrier();
        return live(step, 'rollback', () => booth.rollback(step, reason, takeObservations()));
      },
    };

    try {
      const ran = await Promise.race([
        agent.run(ctx, input).then((output) => ({ output })),
        continueRequested.then((reason) => ({ reason })),
      ]);
      if ('reason' in ran) {
        barrier();
        // Updates and signals being handled finish in this segment; nothing of theirs is left behind.
        await condition(allHandlersFinished);
        const now = workflowInfo();
        try {
          // The tape says where the segment ended and why; the readings since the last step go with it.
          await localRecorder.recordSegment({
            step: started,
            segment: continuation.segment,
            reason: ran.reason,
            historyEvents: now.historyLength,
            historyBytes: now.historySize,
            ...takeObservations(),
          });
        } catch (err) {
          // The run outranks its recording (as with the outcome); the next segment's steps are still recorded.
          log.warn('could not record the end of the segment on the tape', { error: String(err) });
        }
        const { continued: _, ...rest } = options;
        // `continued` first: the content driver knows the options of a next segment by it (stepPayloads.ts).
        await continueAsNew<typeof workflow>(input, {
          continued: continuation.next(started, runKey ?? info.runId, {
            ...(guard ? { breaker: guard.saveState() } : {}),
            approvals: desk.saveState(),
          }),
          ...rest,
        });
      }
      const output = (ran as { output: O }).output;
      barrier();
      // Escrow ends with the run: nobody can commit it later, so a run that never settled it rolls it back.
      // Behind a patch, so histories recorded before this step existed still replay.
      if (unsettled && patched('jukebox.rollback-unsettled-staging'))
        await booth.discardUnsettled(started, takeObservations());
      await recordOutcome({ status: 'completed', result: output });
      // Runs recorded before this patch sealed the outcome a second time (a no-op on a sealed tape); their
      // histories hold that second activity, so they replay only if it is issued again for them.
      if (!patched('jukebox.record-outcome-once'))
        await recordOutcome({ status: 'completed', result: output });
      return { output, steps };
    } catch (err) {
      // The run goes on in its next segment: nothing of this one is settled, discarded or sealed.
      if (err instanceof ContinueAsNew) throw err;
      barrier();
      // Whatever failed (a step, the agent's own typed error, a breaker trip), nothing it staged survives it.
      await booth.discardAfterFailure(started, err, takeObservations());
      await recordOutcome({
        status: isCancellation(err) ? 'cancelled' : 'failed',
        error: describeFailure(err),
      });
      // A plain error thrown by workflow code would fail the workflow task and retry it forever; an agent's own
      // typed error ends the run with its retry semantics instead.
      if (err instanceof JukeboxError) throw toApplicationFailure(err);
      throw err;
    }
  };
  Object.defineProperty(workflow, 'name', { value: agent.name });
  return workflow;
}
