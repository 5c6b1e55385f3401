/** Running agents: a worker factory and client helpers to start runs and follow their steps. */
export { type StartAgentOptions, startAgent, waitWithProgress } from './agentClient';
export { createJukeboxWorker, DEFAULT_TASK_QUEUE, type JukeboxWorkerOptions } from './createWorker';
export { createDirectContext } from './directContext';
export { LATENCY_WORKER_OPTIONS } from './latencyOptions';
export { bundleAgentWorkflows, DEFAULT_WORKFLOWS_PATH } from './workflowBundle';
