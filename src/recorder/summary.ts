/** One streaming pass over a tape that yields what `jbx ls` shows about a recording. */
import { statSync } from 'node:fs';
import { BoothOutcome, type RolledBack } from './boothOutcome';
import { openTape, TapeError } from './tape';

export interface TapeSummary {
  file: string;
  tapeId: string | null;
  workflowType: string | null;
  workflowId: string | null;
  runId: string | null;
  /** ISO time the tape was created. */
  started: string | null;
  /** Distinct agent steps that started an activity. */
  steps: number;
  frames: number;
  /** `completed` / `failed` / `cancelled` from the outcome, `running` when unsealed, `damaged` on a bad frame. */
  outcome: string;
  /** The circuit breaker tripped during the run (a `breaker.trip` frame), whatever the outcome. */
  tripped: boolean;
  /** The run's staging was rolled back by a refused or failed commit, or by the agent, and nothing committed after. */
  rolledBack: RolledBack | null;
  tokens: { input: number; output: number };
  /** Sum of the known llm.response costs (USD); null when none had a price. */
  cost: number | null;
  bytes: number;
  /** The first fault, when the tape did not verify. */
  problem: string | null;
}

export function summarizeTape(
  file: string,
  onProgress?: (frames: number, offset: number) => void,
): TapeSummary {
  const bytes = statSync(file).size;
  const s: TapeSummary = {
    file,
    tapeId: null,
    workflowType: null,
    workflowId: null,
    runId: null,
    started: null,
    steps: 0,
    frames: 0,
    outcome: 'running',
    tripped: false,
    rolledBack: null,
    tokens: { input: 0, output: 0 },
    cost: null,
    bytes,
    problem: null,
  };
  let cursor: ReturnType<typeof openTape>;
  try {
    cursor = openTape(file, { keepBlobs: false });
  } catch (err) {
    if (!(err instanceof TapeError)) throw err;
    return { ...s, outcome: 'damaged', problem: err.message };
  }
  const steps = new Set<number>();
  const booth = new BoothOutcome();
  let runEnd: number | null = null;
  try {
    s.tapeId = cursor.header.tapeId;
    s.workflowType = cursor.header.workflowType;
    s.workflowId = cursor.header.workflowId;
    s.runId = cursor.header.runId;
    s.started = new Date(cursor.header.createdAtMs).toISOString();
    for (;;) {
      const f = cursor.next();
      if (!f) break;
      if (onProgress && f.index % 1024 === 0) onProgress(f.index, f.offset);
      const p = f.payload as Record<string, unknown>;
      booth.see(f.kind, f.step, p);
      if (f.kind === 'activity.start') steps.add(f.step);
      else if (f.kind === 'llm.response') {
        const u = p.usage as { inputTokens?: number; outputTokens?: number } | undefined;
        s.tokens.input += u?.inputTokens ?? 0;
        s.tokens.output += u?.outputTokens ?? 0;
        if (typeof p.cost === 'number') s.cost = (s.cost ?? 0) + p.cost;
      } else if (f.kind === 'outcome') {
        s.outcome = String(p.status ?? 'unknown');
        runEnd = f.step;
      } else if (f.kind === 'breaker.trip') s.tripped = true;
    }
    if (cursor.tornTail) s.problem = `torn tail at byte ${cursor.tornTail.offset}`;
  } catch (err) {
    if (!(err instanceof TapeError)) throw err;
    s.outcome = 'damaged';
    s.problem = err.message;
  } finally {
    s.rolledBack = booth.result(runEnd);
    s.frames = cursor.frameCount;
    s.steps = steps.size;
    cursor.close();
  }
  return s;
}
