import type { Connection, WorkflowHandle } from '@temporalio/client';
import { resolveBreakerConfig } from '../../breaker/config';
import { loadPriceBook, type PriceBook } from '../../llm/pricing';
import type { ContentOptions } from '../content/dataConverter';
import { DEFAULT_TASK_QUEUE } from '../worker/createWorker';
import type { AgentGroupInput, agentGroupWorkflow } from '../workflow/agentGroupWorkflow';
import {
  type BreakerDecision,
  type BreakerStatus,
  breakerCloseSignal,
  breakerStatusQuery,
} from '../workflow/breakerSignals';
import type { AgentRunOptions } from '../workflow/runOptions';
import { jukeboxClient } from './jukeboxClient';

export interface StartAgentGroupOptions {
  connection: Connection;
  namespace: string;
  taskQueue?: string;
  workflowId?: string;
  runOptions?: AgentRunOptions;
  /** Checks prices against this book before starting; default the process's (JUKEBOX_PRICE_TABLE). */
  priceBook?: PriceBook;
  /** The runs' content store, as the workers have it (default: the one the environment names). */
  content?: ContentOptions;
}

/**
 * Starts an agentGroupWorkflow after checking its breaker config and model prices here, so a bad cap or an
 * unpriced model is an error in the caller at start-up (the worker checks again: its table is what counts).
 */
export async function startAgentGroup(
  input: AgentGroupInput,
  options: StartAgentGroupOptions,
): Promise<WorkflowHandle<typeof agentGroupWorkflow>> {
  resolveBreakerConfig(input.breaker);
  const book = options.priceBook ?? loadPriceBook();
  for (const t of input.tracks) book.priceOf(t.provider, t.model);
  const client = jukeboxClient(options.connection, options.namespace, options.content);
  return client.workflow.start<typeof agentGroupWorkflow>('agentGroupWorkflow', {
    taskQueue: options.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId:
      options.workflowId ?? `agentGroup-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    args: [input, options.runOptions ?? {}],
  });
}

/**
 * Closes an open breaker: `resume` (optionally with a new per-track cap, checked here so a bad cap fails in
 * the caller, not in the run) or `abort`. The run must be waiting (resumeWindowMs > 0) for it to matter.
 */
export async function closeBreaker(handle: WorkflowHandle, decision: BreakerDecision): Promise<void> {
  if (decision.decision === 'resume' && decision.capUsd !== undefined)
    resolveBreakerConfig({ capUsd: decision.capUsd });
  await handle.signal(breakerCloseSignal, decision);
}

/** Whether the breaker is open, why, and each track's spend. */
export function breakerStatus(handle: WorkflowHandle): Promise<BreakerStatus> {
  return handle.query(breakerStatusQuery);
}
