/** Running agents: a worker factory and client helpers to start runs and follow their steps. */

export { createDirectContext } from '../agent/directContext';
export { type StartAgentOptions, startAgent, waitWithProgress } from './client/agentClient';
export { createJukeboxWorker, DEFAULT_TASK_QUEUE, type JukeboxWorkerOptions } from './worker/createWorker';
export { LATENCY_WORKER_OPTIONS } from './worker/latencyOptions';
export { bundleAgentWorkflows, DEFAULT_WORKFLOWS_PATH } from './worker/workflowBundle';
