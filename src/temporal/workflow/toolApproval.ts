/**
 * A tool call that waits for a person (docs/approvals.md): asked up front by `ctx.tool(..., { approval })`, or
 * found out by the step itself (the tool's definition asks, or an MCP call in it does), in which case the step
 * returns unrun and runs again once approved. A rejection, or a timeout with `onTimeout: 'rollback'`, rolls the
 * run's staging back through the booth and throws; the agent may catch the error and go on.
 */
import {
  type ApprovalKind,
  type ApprovalOptions,
  type ApprovalOutcome,
  ApprovalRejectedError,
  type ApprovalRequest,
  ApprovalTimedOutError,
  approvalSubjectText,
  resolveApprovalOptions,
} from '../../agent/approval';
import type { ToolApproval } from '../../agent/context';
import { readNeedsApproval, type ToolStepApprovals } from '../../agent/toolStepResult';
import { crossRealmError, JukeboxError } from '../../errors/JukeboxError';
import type { ApprovalDesk } from './approvalDesk';

/** A tool step that keeps asking: its MCP call's arguments differ on every run, so no approval ever fits. */
export class ToolApprovalLoopError extends JukeboxError {
  constructor(tool: string, asks: number) {
    super(
      'TOOL_APPROVAL_LOOP',
      `tool ${tool} asked for approval ${asks} times in one call: the MCP call it makes changes its arguments on every run (a clock or random value in them?), so no decision can be matched to it; make the tool's arguments stable`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('ToolApprovalLoopError', ToolApprovalLoopError);

const MAX_ASKS = 5;

export interface ToolApprovalDeps {
  desk: ApprovalDesk;
  /** Rolls the run's staging back (the booth's rollback at this step), after a rejection or a timeout. */
  rollback(step: number, reason: string): Promise<unknown>;
  /** Runs before anything the workflow schedules (the local steps' tape barrier). */
  barrier(): void;
}

async function decide(
  deps: ToolApprovalDeps,
  step: number,
  kind: ApprovalKind,
  reason: string,
  subject: ApprovalRequest['subject'],
  options: ApprovalOptions | true | undefined,
): Promise<Extract<ApprovalOutcome, { outcome: 'approved' }>> {
  deps.barrier();
  const outcome = await deps.desk.ask(step, kind, reason, subject, options);
  if (outcome.outcome === 'approved') return outcome;
  const what = approvalSubjectText(kind, subject);
  if (outcome.outcome === 'rejected') {
    await deps.rollback(step, `${what} was rejected by ${outcome.by}: ${outcome.note ?? ''}`.trim());
    throw new ApprovalRejectedError(what, outcome);
  }
  if (outcome.onTimeout === 'rollback')
    await deps.rollback(step, `nobody decided on ${what} before approval ${outcome.approvalId}'s deadline`);
  throw new ApprovalTimedOutError(what, resolveApprovalOptions(options).timeout, outcome.onTimeout);
}

/**
 * Runs the tool step `run` once a person let it: `ask` is ctx.tool's approval option. Returns the step's
 * answer; the arguments it ran with are the person's edit when they made one.
 */
export function approvedToolCall(
  deps: ToolApprovalDeps,
  step: number,
  name: string,
  args: Record<string, unknown>,
  ask: true | ToolApproval | undefined,
  run: (args: Record<string, unknown>, approvals: ToolStepApprovals) => Promise<unknown>,
): Promise<unknown> {
  const call: ToolCall = { deps, step, name, args, ask, run };
  // A fork re-running a step its parent asked about before the fork step takes the parent's decision over, edited
  // arguments included, even when the asking came from the tool's definition (the step would otherwise ask).
  if (ask || deps.desk.inheritedKind(step) === 'tool') return askedToolCall(call);
  // Most steps: nobody is asked before the tool runs, and its answer needs nobody. One `then` and no async layer:
  // the workflow sandbox captures a stack trace for every promise created in it, an await included.
  const approvals: ToolStepApprovals = {};
  let first: Promise<unknown>;
  try {
    first = run(args, approvals);
  } catch (err) {
    return Promise.reject(err);
  }
  return first.then((answered) =>
    readNeedsApproval(answered) ? askedToolCall(call, { approvals, answered }) : answered,
  );
}

/** One tool step's call, as approvedToolCall got it. */
interface ToolCall {
  deps: ToolApprovalDeps;
  step: number;
  name: string;
  args: Record<string, unknown>;
  ask: true | ToolApproval | undefined;
  run: (args: Record<string, unknown>, approvals: ToolStepApprovals) => Promise<unknown>;
}

/** approvedToolCall where a person is asked: before the tool runs, or after its `first` answer said so. */
async function askedToolCall(
  { deps, step, name, args, ask, run }: ToolCall,
  first?: { approvals: ToolStepApprovals; answered: unknown },
): Promise<unknown> {
  let runArgs = args;
  const approvals: ToolStepApprovals = first?.approvals ?? {};
  const options = ask === true ? undefined : ask;
  if (!first) {
    const o = await decide(
      deps,
      step,
      'tool',
      options?.reason ?? `the agent asks a person before tool ${name} runs`,
      { tool: name, args },
      ask,
    );
    runArgs = o.args ?? args;
    approvals.tool = o.approvalId;
  }
  for (let asks = 0; ; asks++) {
    const answered = asks === 0 && first ? first.answered : await run(runArgs, approvals);
    const needs = readNeedsApproval(answered);
    if (!needs) return answered;
    if (asks >= MAX_ASKS) throw new ToolApprovalLoopError(name, asks);
    if (needs.kind === 'tool') {
      const o = await decide(
        deps,
        step,
        'tool',
        needs.reason,
        { tool: name, args: runArgs },
        needs.options ?? ask,
      );
      runArgs = o.args ?? runArgs;
      approvals.tool = o.approvalId;
    } else {
      const subject = needs.subject as { server: string; tool: string; args: Record<string, unknown> };
      const o = await decide(deps, step, 'mcp', needs.reason, subject, ask);
      approvals.mcp = [
        ...(approvals.mcp ?? []),
        {
          approvalId: o.approvalId,
          server: subject.server,
          tool: subject.tool,
          asked: subject.args,
          args: o.args ?? subject.args,
        },
      ];
    }
  }
}
