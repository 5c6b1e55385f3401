/**
 * What a run leaves behind when the server ends it. A run that is terminated, times out or is reset never runs
 * its own catch: its Shadow Booth staging would stay in escrow and its tape would stay open for good. Every
 * worker sweeps for such runs (docs/long-runs.md): when it starts and then every `intervalMs`, it takes the runs
 * with staging on this host and the runs of its task queue the server ended abnormally, asks the server how
 * each one ended (following a run that continued as new to its last execution), and for every one that ended
 * at least `graceMs` ago it discards the staging (recorded as the run's rollback) and seals the tape with that
 * outcome. A run still going, or one the server does not know (another namespace's), is left alone.
 *
 * Several workers may sweep the same run at once: the tape's lock orders them, discarding is idempotent and a
 * sealed tape is not sealed again.
 */
import { existsSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from '@temporalio/worker';
import type { StagedSummary } from '../../agent/commit';
import type { BoothRuntime } from '../../booth/shadowBooth';
import type { EndedRunOutcome } from '../../recorder/observations';
import type { TapeRecorder } from '../../recorder/recorder';
import { summarize } from '../activities/commitActivities';

export interface RunSweeperOptions {
  /** Time between sweeps (default 60 s); the first runs when the worker starts. */
  intervalMs?: number;
  /**
   * How long after a run ended before its staging is discarded (default 60 s): an activity the run left
   * running notices that its run is gone within its heartbeat timeout, and stops writing into the staging.
   */
  graceMs?: number;
  /** How far back the sweeper looks for runs the server ended (default 7 days). */
  lookbackMs?: number;
}

export interface SweptRun {
  workflowId: string;
  /** The run the tape and staging are named after (a run that continued as new: its first execution). */
  runKey: string;
  status: EndedRunOutcome['status'];
  /** The execution that ended. */
  endedRunId: string;
  tape: 'sealed' | 'already-sealed' | 'no-tape' | 'no-recorder';
  /** Whether staging was found and discarded. */
  discarded: boolean;
}

export interface SweepReport {
  swept: SweptRun[];
  /** Runs looked at and left alone: still running, ended less than graceMs ago, or unknown to the server. */
  skipped: { workflowId: string; runKey: string; why: 'running' | 'grace' | 'unknown' }[];
  errors: { workflowId: string; runKey: string; error: string }[];
}

type WorkflowService = Client['workflowService'];
type Describe = temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const STATUS = temporal.api.enums.v1.WorkflowExecutionStatus;
const GRPC_NOT_FOUND = 5;
/** A chain longer than this is not followed in one sweep (a run of a million segments resumes next time). */
const MAX_HOPS = 10_000;

/** How a run ended, as the server tells it. */
interface RunEnd {
  outcome: EndedRunOutcome;
  endedRunId: string;
  closedAtMs: number;
  workflowType: string;
  taskQueue: string;
}

type RunState = RunEnd | 'running' | 'unknown';

const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  t ? Number(String(t.seconds ?? 0)) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;

const key = (workflowId: string, runKey: string) => `${workflowId}\u0000${runKey}`;

export class RunSweeper {
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly lookbackMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepReport> | undefined;
  private stopped = false;
  /** Runs settled (swept, or found with nothing to do), so later sweeps skip them: key → when. */
  private readonly settled = new Map<string, number>();
  /** The latest execution seen of each run that continued as new: the next sweep starts there. */
  private readonly chainAt = new Map<string, string>();

  constructor(
    private readonly deps: {
      service: WorkflowService;
      namespace: string;
      taskQueue: string;
      recorder?: TapeRecorder;
      booth?: BoothRuntime;
      log?: Pick<Logger, 'info' | 'warn'>;
    },
    options: RunSweeperOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 60_000;
    this.graceMs = options.graceMs ?? 60_000;
    this.lookbackMs = options.lookbackMs ?? 7 * 24 * 3_600_000;
  }

  /** Sweeps now and then every intervalMs, until stop(). */
  start(): void {
    const tick = () => {
      if (this.stopped) return;
      void this.sweep()
        .catch((err) => this.deps.log?.warn('run sweep failed', { error: String(err) }))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  /** Stops sweeping; waits for a sweep under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One sweep (sweeps never overlap: a call during one waits for it and starts the next). */
  sweep(): Promise<SweepReport> {
    const next = (this.running ?? Promise.resolve()).catch(() => undefined).then(() => this.sweepOnce());
    this.running = next;
    return next;
  }

  private async sweepOnce(): Promise<SweepReport> {
    const report: SweepReport = { swept: [], skipped: [], errors: [] };
    const now = Date.now();
    for (const [k, at] of this.settled) if (now - at > this.lookbackMs) this.settled.delete(k);
    const candidates = new Map<string, { workflowId: string; runKey: string }>();
    const add = (workflowId: string, runKey: string) => {
      const k = key(workflowId, runKey);
      if (!this.settled.has(k)) candidates.set(k, { workflowId, runKey });
    };
    for (const r of (await this.deps.booth?.stagedRuns()) ?? []) add(r.workflowId, r.runId);
    for (const r of await this.endedOnServer(now)) add(r.workflowId, r.runKey);
    for (const c of candidates.values()) {
      if (this.stopped) break;
      try {
        const state = await this.stateOf(c.workflowId, c.runKey);
        if (state === 'running' || state === 'unknown') {
          report.skipped.push({ ...c, why: state });
          continue;
        }
        if (Date.now() - state.closedAtMs < this.graceMs) {
          report.skipped.push({ ...c, why: 'grace' });
          continue;
        }
        const swept = await this.settle(c.workflowId, c.runKey, state);
        this.settled.set(key(c.workflowId, c.runKey), Date.now());
        if (swept.discarded || swept.tape === 'sealed') {
          report.swept.push(swept);
          this.deps.log?.info('swept a run the server ended', { ...swept });
        }
      } catch (err) {
        report.errors.push({ ...c, error: err instanceof Error ? err.message : String(err) });
        this.deps.log?.warn('could not sweep a run', { ...c, error: String(err) });
      }
    }
    return report;
  }

  /**
   * Runs of this worker's task queue the server terminated or timed out (a reset terminates the run it
   * replaces), with the run their tape and staging are named after.
   */
  private async endedOnServer(now: number): Promise<{ workflowId: string; runKey: string }[]> {
    const since = new Date(now - this.lookbackMs).toISOString();
    const queue = this.deps.taskQueue.replace(/["\\]/g, '');
    const query = `TaskQueue = "${queue}" AND ExecutionStatus IN ("Terminated", "TimedOut") AND CloseTime > "${since}"`;
    const out: { workflowId: string; runKey: string }[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await this.deps.service.listWorkflowExecutions({
        namespace: this.deps.namespace,
        query,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const e of page.executions ?? []) {
        const workflowId = e.execution?.workflowId;
        const runId = e.execution?.runId;
        if (!workflowId || !runId) continue;
        const first = e.firstRunId || runId;
        if (this.settled.has(key(workflowId, runId)) && this.settled.has(key(workflowId, first))) continue;
        out.push({ workflowId, runKey: await this.runKeyOf(workflowId, runId, first) });
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken && !this.stopped);
    return out;
  }

  /**
   * The run an ended execution recorded and staged under: its own id, or for a later segment of a run that
   * continued as new, its chain's first (src/temporal/workflow/continuation.ts).
   */
  private async runKeyOf(workflowId: string, runId: string, firstRunId: string): Promise<string> {
    if (firstRunId === runId) return runId;
    return (await this.recordsUnder(workflowId, runId)) ? runId : firstRunId;
  }

  /** Whether a tape or staging is named after this execution (else it records under its chain's first run). */
  private async recordsUnder(workflowId: string, runId: string): Promise<boolean> {
    return (
      (await this.deps.recorder?.store.has(workflowId, runId)) === true ||
      (this.deps.booth !== undefined && existsSync(this.deps.booth.runDir(workflowId, runId)))
    );
  }

  private async describe(workflowId: string, runId: string): Promise<Describe | null> {
    try {
      return await this.deps.service.describeWorkflowExecution({
        namespace: this.deps.namespace,
        execution: { workflowId, runId },
      });
    } catch (err) {
      if ((err as { code?: number }).code === GRPC_NOT_FOUND) return null;
      throw err;
    }
  }

  private async lastEvent(workflowId: string, runId: string): Promise<HistoryEvent | undefined> {
    const page = await this.deps.service.getWorkflowExecutionHistoryReverse({
      namespace: this.deps.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1,
    });
    return page.history?.events?.[0] ?? undefined;
  }

  /** How the run named `runKey` ended: its last execution's closing, followed through continue-as-new. */
  private async stateOf(workflowId: string, runKey: string): Promise<RunState> {
    const k = key(workflowId, runKey);
    let runId = this.chainAt.get(k) ?? runKey;
    for (let hop = 0; hop < MAX_HOPS; hop++) {
      const d = await this.describe(workflowId, runId);
      const info = d?.workflowExecutionInfo;
      if (!info) return 'unknown';
      const status = info.status ?? STATUS.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED;
      if (status === STATUS.WORKFLOW_EXECUTION_STATUS_RUNNING) return 'running';
      const last = await this.lastEvent(workflowId, runId);
      // Continued as new, retried or run by a cron schedule: the run goes on in the next execution.
      const next =
        last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ||
        last?.workflowExecutionFailedEventAttributes?.newExecutionRunId ||
        last?.workflowExecutionTimedOutEventAttributes?.newExecutionRunId ||
        last?.workflowExecutionCompletedEventAttributes?.newExecutionRunId;
      if (next) {
        runId = next;
        this.chainAt.set(k, next);
        continue;
      }
      const resetTo = d.workflowExtendedInfo?.resetRunId;
      if (status === STATUS.WORKFLOW_EXECUTION_STATUS_TERMINATED && resetTo && resetTo !== runId) {
        // The run that replaces it may carry on with this one's tape and staging (a reset within a later
        // segment keeps the run's key): it is this run's end only once it has ended too.
        const replacing = await this.describe(workflowId, resetTo);
        if (
          replacing?.workflowExecutionInfo?.status === STATUS.WORKFLOW_EXECUTION_STATUS_RUNNING &&
          !(await this.recordsUnder(workflowId, resetTo))
        )
          return 'running';
      }
      return {
        outcome: endOutcome(status, last, resetTo && resetTo !== runId ? resetTo : undefined, runId),
        endedRunId: runId,
        closedAtMs: ms(info.closeTime),
        workflowType: info.type?.name ?? '',
        taskQueue: info.taskQueue ?? this.deps.taskQueue,
      };
    }
    return 'running';
  }

  private async settle(workflowId: string, runKey: string, end: RunEnd): Promise<SweptRun> {
    const { booth, recorder } = this.deps;
    let discarded = false;
    const reason = `${end.outcome.error.message}; swept by a worker of task queue ${this.deps.taskQueue}`;
    const discard = booth
      ? async (): Promise<Record<string, unknown> | null> => {
          if (!existsSync(booth.runDir(workflowId, runKey))) return null;
          const opened = await booth.open(workflowId, runKey);
          try {
            let staged: StagedSummary = { files: [], sql: [], mcp: [] };
            try {
              staged = summarize(await opened.changeSet());
            } catch {
              // A half-committed or damaged part cannot be listed; discarding it is still the right thing.
            }
            const { mcpSent } = await opened.discard();
            discarded = true;
            return {
              part: 'all',
              reason,
              discarded: staged,
              swept: true,
              ...(mcpSent.length > 0 ? { mcpSent } : {}),
            };
          } finally {
            await opened.close();
          }
        }
      : undefined;
    let tape: SweptRun['tape'] = 'no-recorder';
    const outcome = { ...end.outcome, ...(end.endedRunId !== runKey ? { runId: end.endedRunId } : {}) };
    if (recorder) {
      tape = await recorder.sealEndedRun(
        {
          workflowId,
          runId: runKey,
          workflowType: end.workflowType,
          taskQueue: end.taskQueue,
          agentCodeHash: recorder.agentCodeHash,
        },
        outcome,
        discard,
      );
    } else await discard?.();
    return { workflowId, runKey, status: outcome.status, endedRunId: end.endedRunId, tape, discarded };
  }
}

/** The tape outcome of a run that ended as `status`, in words taken from its closing event. */
function endOutcome(
  status: number,
  last: HistoryEvent | undefined,
  resetTo: string | undefined,
  runId: string,
): EndedRunOutcome {
  const terminated = last?.workflowExecutionTerminatedEventAttributes;
  if (status === STATUS.WORKFLOW_EXECUTION_STATUS_TERMINATED && resetTo)
    return {
      status: 'reset',
      error: {
        name: 'WorkflowReset',
        message: `run ${runId} was reset; it goes on as run ${resetTo}${terminated?.reason ? ` (${terminated.reason})` : ''}`,
      },
    };
  if (status === STATUS.WORKFLOW_EXECUTION_STATUS_TERMINATED)
    return {
      status: 'terminated',
      error: {
        name: 'WorkflowTerminated',
        message: `run ${runId} was terminated${terminated?.identity ? ` by ${terminated.identity}` : ''}${terminated?.reason ? `: ${terminated.reason}` : ''}`,
      },
    };
  if (status === STATUS.WORKFLOW_EXECUTION_STATUS_TIMED_OUT)
    return {
      status: 'timed-out',
      error: {
        name: 'WorkflowTimedOut',
        message: `run ${runId} passed its workflow execution or run timeout`,
      },
    };
  const words: Record<number, EndedRunOutcome['status']> = {
    [STATUS.WORKFLOW_EXECUTION_STATUS_COMPLETED]: 'completed',
    [STATUS.WORKFLOW_EXECUTION_STATUS_FAILED]: 'failed',
    [STATUS.WORKFLOW_EXECUTION_STATUS_CANCELED]: 'cancelled',
  };
  const s = words[status] ?? 'failed';
  return {
    status: s,
    error: {
      name: 'RunEndedUnsettled',
      message: `run ${runId} ended (${s}) without sealing its tape or settling its staging`,
    },
  };
}
