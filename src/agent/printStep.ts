import type { StepSummary } from './context';

export function formatStep(step: StepSummary): string {
  const tokens =
    step.inputTokens !== undefined ? ` [${step.inputTokens} in / ${step.outputTokens ?? 0} out tokens]` : '';
  return `  step ${String(step.index).padStart(2)}  ${step.kind.padEnd(4)} ${step.name}: ${step.detail}${tokens}`;
}

export function printStep(step: StepSummary): void {
  console.log(formatStep(step));
}
