import type { McpGrant } from '../booth/mcp/approval';
import type { ApprovalOptions } from './approval';

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

const APPROVAL_MARK = 'jukebox.toolNeedsApproval';

/**
 * What a toolStep returns instead of the tool's output when the call must wait for a person first: the tool's
 * definition asks for every call (`kind: 'tool'`, nothing ran), or an MCP call inside it does (`kind: 'mcp'`,
 * the step's staging was thrown away). The workflow asks, then runs the step again with the decision.
 */
export interface ToolNeedsApproval {
  [APPROVAL_MARK]: 1;
  kind: 'tool' | 'mcp';
  reason: string;
  subject:
    | { tool: string; args: Record<string, unknown> }
    | { server: string; tool: string; args: Record<string, unknown> };
  /** The tool definition's approval options (kind tool). */
  options?: ApprovalOptions;
}

export function needsApprovalResult(r: Omit<ToolNeedsApproval, typeof APPROVAL_MARK>): ToolNeedsApproval {
  return { [APPROVAL_MARK]: 1, ...r };
}

export function readNeedsApproval(result: unknown): ToolNeedsApproval | null {
  return result !== null &&
    typeof result === 'object' &&
    (result as Record<string, unknown>)[APPROVAL_MARK] === 1
    ? (result as ToolNeedsApproval)
    : null;
}

/** What a toolStep runs with after a person approved: the tool call itself, and MCP calls inside it. */
export interface ToolStepApprovals {
  /** The approval of the tool call (its definition asks): the step may run. */
  tool?: string;
  mcp?: McpGrant[];
}
