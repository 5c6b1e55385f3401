import type { WorkerOptions } from '@temporalio/worker';

/**
 * Worker settings for short steps, applied by createJukeboxWorker (docs/performance.md has the measurements).
 * Each one keeps a poll waiting on the server before the task it is for exists, so the server hands the task
 * over the moment it is created instead of after a fresh poll's round trip.
 */
export const LATENCY_WORKER_OPTIONS = {
  // Eager activities: up to this many activities a workflow task schedules come back in the task's own
  // completion response, skipping the matching service (needs system.enableActivityEagerExecution).
  maxEagerActivityReservationsPerWorkflowTask: 3,
} satisfies Partial<WorkerOptions>;
