import path from 'node:path';
import { TapeWriter } from '../../../src/recorder/tape';

export interface SyntheticRun {
  name: string;
  workflowType?: string;
  createdAtMs: number;
  /** Cost of each step's llm.response (null: no price). */
  costs: (number | null)[];
  outcome?: 'completed' | 'failed' | 'cancelled';
  tripped?: boolean;
}

/** Writes a tape the way the recorder lays one out (activity.start, llm.response per step), small and fast. */
export async function writeSyntheticTape(dir: string, run: SyntheticRun): Promise<string> {
  const file = path.join(dir, `${run.name}.jbx`);
  const w = await TapeWriter.open(
    file,
    {
      tapeId: `${run.name}/r1`,
      createdAtMs: run.createdAtMs,
      workflowType: run.workflowType ?? 'researchAgent',
      workflowId: run.name,
      runId: 'r1',
      taskQueue: 'q',
      agentCodeHash: 'blake3:00',
    },
    { fsync: 'none' },
  );
  run.costs.forEach((cost, step) => {
    const activityId = String(step + 1);
    void w.append({
      kind: 'activity.start',
      step,
      payload: { activityId, attempt: 1, activityType: 'llmStep' },
    });
    void w.append({
      kind: 'llm.response',
      step,
      payload: { activityId, attempt: 1, usage: { inputTokens: 10, outputTokens: 2 }, cost },
    });
    void w.append({ kind: 'activity.complete', step, payload: { activityId, attempt: 1 } });
  });
  if (run.tripped)
    await w.append({
      kind: 'breaker.trip',
      step: run.costs.length - 1,
      payload: { breaker: 'cost', reason: 'cap' },
    });
  if (run.outcome) await w.seal({ status: run.outcome }, { step: run.costs.length });
  await w.close();
  return file;
}
