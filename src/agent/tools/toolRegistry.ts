import type { ShadowBooth } from '../../booth/shadowBooth';
import { crossRealmError, JukeboxError } from '../../errors';
import type { ToolSpec } from '../../llm/types';
import type { ToolApproval } from '../context';
import { type ToolPolicy, toolPolicyOf } from './toolPolicy';

export interface ToolInvocation {
  /**
   * Fires when this attempt must stop: the run was cancelled, the attempt ran past its timeout, the server no
   * longer knows the step, or the worker is shutting down. Pass it to whatever the tool waits on (fetch, child
   * processes, SDK calls); the booth's shell kills its command when it fires. Inside Temporal it is the
   * activity's cancellation signal, reaching a running tool with its next heartbeat (docs/long-steps.md).
   */
  signal: AbortSignal;
  /** The run's Shadow Booth when the worker has one: stage files, SQL and MCP calls here, not on the real targets. */
  booth?: ShadowBooth;
}

/**
 * A tool: its spec for the model, its code, and optionally how long one attempt may run (`timeoutMs`) and how it
 * is retried (`retry`); `ctx.tool`'s options override both per call. Defaults: docs/long-steps.md.
 */
export interface ToolDefinition extends ToolPolicy {
  spec: ToolSpec;
  run(args: Record<string, unknown>, invocation: ToolInvocation): Promise<unknown>;
  /**
   * Every call of this tool waits for a person's decision before it runs (ctx.tool's `approval` option, for
   * every caller): `true`, or the wait's options and the reason shown.
   */
  approval?: true | ToolApproval;
}

export class ToolNotFoundError extends JukeboxError {
  constructor(name: string, known: string[]) {
    super(
      'TOOL_NOT_FOUND',
      `No tool named ${JSON.stringify(name)} is registered on this worker (known: ${known.join(', ') || 'none'}). ` +
        'Register it in the ToolRegistry passed to createJukeboxWorker, or fix the tool name the model was given.',
      { nonRetryable: true },
    );
  }
}
crossRealmError('ToolNotFoundError', ToolNotFoundError);

export class ToolArgumentsError extends JukeboxError {
  constructor(tool: string, problem: string) {
    super('TOOL_ARGUMENTS_INVALID', `Tool ${tool}: ${problem}`, { nonRetryable: true });
  }
}
crossRealmError('ToolArgumentsError', ToolArgumentsError);

/** The tools a worker can run, by name. Tools run in activities, so they may do any I/O. */
export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();

  constructor(tools: ToolDefinition[] = []) {
    for (const t of tools) this.register(t);
  }

  register(tool: ToolDefinition): this {
    if (this.tools.has(tool.spec.name)) throw new Error(`Tool ${tool.spec.name} is registered twice.`);
    // A policy that cannot be applied fails where the worker starts, not in the middle of a run.
    toolPolicyOf(tool, `tool ${JSON.stringify(tool.spec.name)}`);
    this.tools.set(tool.spec.name, tool);
    return this;
  }

  /** The timeout and retry policy of every tool that sets one, by name, as the workflow picks them up. */
  policies(): Record<string, ToolPolicy> {
    const out: Record<string, ToolPolicy> = {};
    for (const [name, tool] of this.tools) {
      const policy = toolPolicyOf(tool, `tool ${JSON.stringify(name)}`);
      if (policy) out[name] = policy;
    }
    return out;
  }

  get(name: string): ToolDefinition {
    const tool = this.tools.get(name);
    if (!tool) throw new ToolNotFoundError(name, [...this.tools.keys()]);
    return tool;
  }

  /** Whether every call of the tool asks a person first (undefined for an unknown tool: get() says so). */
  approvalOf(name: string): true | ToolApproval | undefined {
    return this.tools.get(name)?.approval;
  }

  specs(): ToolSpec[] {
    return [...this.tools.values()].map((t) => t.spec);
  }
}

export function requireString(tool: string, args: Record<string, unknown>, key: string): string {
  const value = args[key];
  if (typeof value !== 'string' || value === '')
    throw new ToolArgumentsError(
      tool,
      `argument ${key} must be a non-empty string, got ${JSON.stringify(value)}`,
    );
  return value;
}
