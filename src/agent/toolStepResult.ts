/**
 * What a toolStep activity returns. On a worker with a Shadow Booth the tool's output comes wrapped with the fact
 * that the tool was handed the run's booth, so the workflow knows there may be staged changes to settle before the
 * run ends. On a worker without a booth the activity returns the output itself and the run carries no booth
 * bookkeeping at all. The tape records the bare output either way.
 */
const BOOTH_MARK = 'jukebox.boothToolResult';

export interface BoothToolResult {
  [BOOTH_MARK]: 1;
  output: unknown;
}

export function withBoothMark(output: unknown): BoothToolResult {
  return { [BOOTH_MARK]: 1, output };
}

/** The tool's output, and whether it ran with the run's booth; a bare output (or a tape's answer) had none. */
export function readToolStepResult(result: unknown): { output: unknown; booth: boolean } {
  if (result !== null && typeof result === 'object' && (result as Record<string, unknown>)[BOOTH_MARK] === 1)
    return { output: (result as BoothToolResult).output, booth: true };
  return { output: result, booth: false };
}
