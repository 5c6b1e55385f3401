import type { Connection } from '@temporalio/client';
import type { ResearchOutput } from '../../examples/sample/agent';
import { startAgent } from '../../src/temporal';

/**
 * Starts the sample research agent for `steps` scripted model steps, with a short heartbeat timeout and fast
 * retries so that a step whose worker was killed is taken up again by the next worker within seconds.
 */
export function startResearchRun(options: {
  connection: Connection;
  namespace: string;
  taskQueue: string;
  steps: number;
}) {
  return startAgent<Record<string, unknown>, ResearchOutput>(
    'researchAgent',
    { question: 'Walk the knowledge base.', maxTurns: options.steps + 2 },
    {
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      runOptions: { heartbeatTimeoutMs: 2_000, initialRetryIntervalMs: 100 },
    },
  );
}
