/**
 * MCP calls that wait for a person before they run or are escrowed: tools whose annotations say
 * `destructiveHint: true`, and tools the operator lists in the server's `approvalTools`. A hint can only add an
 * approval, never remove one, so it is honoured from any server, trusted or not: a server that says nothing
 * asks only when the operator lists the tool.
 *
 * The tool step cannot wait inside its activity (a person may take a day), so a call that needs a decision is
 * noted here and the step ends without staging anything (src/temporal/activities/stepActivities.ts); the
 * workflow asks, and on approval runs the step again with a grant for that exact call, the person's edited
 * arguments included.
 */
import type { McpServerConfig, McpToolInfo } from './connections';

/** A person approved this call (server, tool and the arguments it asked with): it may be escrowed as `args`. */
export interface McpGrant {
  approvalId: string;
  server: string;
  tool: string;
  /** The arguments the call asked with. */
  asked: Record<string, unknown>;
  /** The arguments to escrow: the person's edit, or `asked`. */
  args: Record<string, unknown>;
}

/** A call that waits for a decision: what the workflow asks about. */
export interface McpApprovalNeeded {
  server: string;
  tool: string;
  args: Record<string, unknown>;
  reason: string;
}

/** Why this call asks a person, or null when it does not. */
export function mcpApprovalReason(
  server: string,
  info: McpToolInfo,
  config: Pick<McpServerConfig, 'approvalTools'>,
): string | null {
  if (config.approvalTools?.includes(info.name))
    return `the operator requires a person to approve ${server}/${info.name} before it is escrowed`;
  if (info.annotations.destructiveHint === true)
    return `${server}/${info.name} is marked destructive (destructiveHint); a person approves it before it is escrowed`;
  return null;
}

function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

/** The grant for exactly this call, if a person approved it. */
export function findGrant(
  grants: readonly McpGrant[],
  server: string,
  tool: string,
  args: Record<string, unknown>,
): McpGrant | undefined {
  const key = canonical(args);
  return grants.find((g) => g.server === server && g.tool === tool && canonical(g.asked) === key);
}
