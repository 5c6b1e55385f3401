/**
 * `ctx.commit` and `ctx.rollback` answered from the tape: the agent gets the recorded commit report, or the
 * recorded refusal or failure as the CommitRolledBackError it saw live, or the recorded rollback report. Before
 * answering, what the code asks is checked against the recording (the gates a commit names, the reason a
 * rollback gives), and, when the project's gates are at hand, they judge the recorded change set again: a gate
 * that decides otherwise now is a divergence at the commit step.
 */
import type { ApprovalOutcome } from '../../agent/approval';
import { type CommitPart, CommitRolledBackError } from '../../agent/commit';
import {
  type BoothChangeSet,
  type Gate,
  type GateParams,
  GateRefusedError,
  GateUnknownError,
  type GateVerdict,
  runGates,
} from '../../booth/verifiers';
import type { BoothStep, RecordedError } from './boothSteps';
import { differences, pick } from './compare';
import { type Divergence, ReplayedStepError } from './errors';
import { plainClone } from './plainClone';

/** The recorded answer of a booth step, handed to the agent: a value, or the error it was thrown. */
export function answerBoothStep(b: BoothStep): unknown {
  const a = b.answer;
  switch (a.type) {
    case 'committed':
      return plainClone(a.report);
    case 'rollback':
      return plainClone(a.report);
    case 'rolled-back':
      throw rolledBack(b.step, a.part, a.reason, a.verdicts, a.staged, a.error, a.approval);
    case 'failed':
      throw new ReplayedStepError(b.step, a.error);
    case 'unfinished':
      throw new ReplayedStepError(b.step, {
        name: 'Error',
        message: `the tape ends inside this ${b.kind} step (the run was cut short there)`,
      });
  }
}

function rolledBack(
  step: number,
  part: CommitPart,
  reason: string,
  verdicts: GateVerdict[],
  staged: Parameters<typeof plainClone>[0],
  error: RecordedError | undefined,
  approval: ApprovalOutcome | undefined,
): CommitRolledBackError {
  const cause =
    part === 'verify' && verdicts.some((v) => !v.ok)
      ? new GateRefusedError(plainClone(verdicts))
      : new ReplayedStepError(step, error ?? { name: 'Error', message: reason });
  return new CommitRolledBackError(
    part,
    reason,
    plainClone(verdicts),
    plainClone(staged) as ConstructorParameters<typeof CommitRolledBackError>[3],
    cause,
    approval ? plainClone(approval) : null,
  );
}

/** The request of a booth step as the code makes it now, against the recorded one. */
export function boothRequestDivergence(b: BoothStep, actual: Record<string, unknown>): Divergence | null {
  const expected: Record<string, unknown> = b.kind === 'commit' ? { gates: b.gates } : { reason: b.reason };
  const fields = differences(expected, actual);
  if (!fields.length) return null;
  return {
    step: b.step,
    frame: b.requestFrame,
    kind: b.kind,
    fields,
    expected: pick(expected, fields),
    actual: pick(actual, fields),
  };
}

/** The verdicts the recording got, or null when the verify step itself failed (no change set was judged). */
function recordedVerdicts(b: BoothStep): GateVerdict[] | null {
  // As the gates answered, before a person's approval turned an ask into a pass.
  const verify = b.activities.find((x) => x.activityType === 'boothVerify');
  const judged = (verify?.result as { verdicts?: GateVerdict[] } | undefined)?.verdicts;
  if (verify?.status === 'completed' && judged) return judged;
  const a = b.answer;
  if (a.type === 'committed') return a.report.verdicts;
  if (a.type === 'rolled-back' && !(a.part === 'verify' && a.error)) return a.verdicts;
  return null;
}

/**
 * The project's gates over the change set the recording's gates judged (or over `changes`, a change set the
 * replay staged itself). Null when they decide as recorded, or when the tape holds no change set to judge.
 */
export async function verdictDivergence(
  b: BoothStep,
  gates: Readonly<Record<string, Gate>>,
  changes: BoothChangeSet | null = b.changes,
): Promise<Divergence | null> {
  const expected = recordedVerdicts(b);
  if (!changes || !expected) return null;
  const frame = b.changesFrame ?? b.requestFrame;
  let actual: GateVerdict[];
  try {
    // A what-if experiment's commit was judged with the run's gate parameters (the verify activity's input).
    const verify = b.activities.find((a) => a.activityType === 'boothVerify');
    const params = (verify?.input as { gateParams?: GateParams } | undefined)?.gateParams;
    actual = await runGates(b.gates ?? [], gates, plainClone(changes), params ?? {});
  } catch (err) {
    if (!(err instanceof GateUnknownError)) throw err;
    return {
      step: b.step,
      frame,
      kind: 'commit.verdicts',
      fields: ['gates'],
      expected: { gates: expected.map((v) => v.gate) },
      actual: { gates: err.message },
    };
  }
  const fields = differences({ verdicts: expected }, { verdicts: actual });
  if (!fields.length) return null;
  return {
    step: b.step,
    frame,
    kind: 'commit.verdicts',
    fields,
    expected: pick({ verdicts: expected }, fields),
    actual: pick({ verdicts: actual }, fields),
  };
}
