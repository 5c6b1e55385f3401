/**
 * The I/O of an approval: writing what was asked (with the run's staged change set, as the person reviews it)
 * and what was decided onto the run's tape. The waiting itself is workflow code (a condition with a timer,
 * src/temporal/workflow/approvalDesk.ts): no activity runs, and no worker slot is held, while a run waits.
 */
import { existsSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import type { ApprovalKind, ApprovalOutcome, ApprovalRequest } from '../../agent/approval';
import type { StagedSummary } from '../../agent/commit';
import type { BoothRuntime } from '../../booth/shadowBooth';
import type { Change } from '../../booth/stagedWorkspace';
import { currentActivityTape } from '../../recorder/activityTape';
import { APPROVAL_EVENT } from '../../telemetry/conventions';
import { activityRun } from './activityRun';
import { summarize } from './commitActivities';

export interface ApprovalRequestedInput {
  step: number;
  request: Omit<ApprovalRequest, 'staged'>;
}

export interface ApprovalDecidedInput {
  step: number;
  kind: ApprovalKind;
  /** What was asked about (ApprovalRequest.subject), so the decision frame reads alone. */
  subject: ApprovalRequest['subject'];
  outcome: ApprovalOutcome;
  /** A fork's: the decision of its parent run, taken over without asking (src/timetravel/fork). */
  inheritedFrom?: string;
}

function fileEntry(c: Change) {
  return { path: c.path, op: c.op, summary: c.summary };
}

export function createApprovalActivities(booth: BoothRuntime | undefined) {
  return {
    /**
     * Records the request and returns what the run has staged, for the listing a person reads. A run that has
     * staged nothing (or a worker without a booth) has nothing to show; its staging folder is not created.
     */
    async approvalRequested(input: ApprovalRequestedInput): Promise<{ staged: StagedSummary | null }> {
      const run = activityRun();
      let files: Change[] = [];
      let staged: StagedSummary | null = null;
      if (booth && existsSync(booth.runDir(run.workflowId, run.runId))) {
        const opened = await booth.open(run.workflowId, run.runId);
        try {
          const changes = await opened.changeSet();
          files = changes.files;
          staged = summarize(changes);
        } finally {
          await opened.close();
        }
      }
      currentActivityTape()?.effect('approval', async (s) => ({
        event: 'request',
        ...input.request,
        ...(staged
          ? {
              staged: {
                files: await Promise.all(
                  files.map(async (c) => ({
                    ...fileEntry(c),
                    ...(c.diff !== undefined ? { diff: await s.putValue(c.diff, input.step) } : {}),
                  })),
                ),
                sql: staged.sql,
                mcp: staged.mcp,
              },
            }
          : {}),
      }));
      return { staged };
    },

    /** Records who decided, when and why (or that nobody did in time), on the tape and the step's span. */
    async approvalDecided(input: ApprovalDecidedInput): Promise<void> {
      const o = input.outcome;
      const common = {
        id: o.approvalId,
        kind: input.kind,
        subject: input.subject,
        ...(input.inheritedFrom !== undefined ? { inheritedFrom: input.inheritedFrom } : {}),
      };
      const payload =
        o.outcome === 'timedOut'
          ? { event: 'timeout', ...common, atMs: o.atMs, onTimeout: o.onTimeout }
          : {
              event: 'decision',
              ...common,
              verdict: o.verdict,
              by: o.by,
              atMs: o.atMs,
              decisionId: o.decisionId,
              via: o.via,
              ...(o.note !== undefined ? { note: o.note } : {}),
              ...(o.args !== undefined ? { args: o.args } : {}),
            };
      currentActivityTape()?.effect('approval', () => payload);
      // With telemetry on, the activity runs inside its own span (Temporal's interceptor); the decision is an
      // event on it. Tapes exported later carry the same event (src/telemetry/tapeExport/tapeSpans.ts).
      trace.getActiveSpan()?.addEvent(APPROVAL_EVENT, {
        'jukebox.approval.id': o.approvalId,
        'jukebox.approval.outcome': o.outcome,
        ...(o.outcome === 'timedOut'
          ? { 'jukebox.approval.on_timeout': o.onTimeout }
          : {
              'jukebox.approval.by': o.by,
              'jukebox.approval.via': o.via,
              ...(o.note !== undefined ? { 'jukebox.approval.note': o.note } : {}),
            }),
      });
    },
  };
}

export type ApprovalActivities = ReturnType<typeof createApprovalActivities>;
