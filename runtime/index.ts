/** Running agents: a worker factory and client helpers to start runs and follow their steps. */
export { startAgent, type StartAgentOptions, waitWithProgress } from './agentClient';
export { createDirectContext } from './directContext';
export { createJukeboxWorker, DEFAULT_TASK_QUEUE, type JukeboxWorkerOptions } from './createWorker';
