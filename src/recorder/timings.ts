/**
 * Where a worker's recording time goes, summed over every activity it recorded. Cheap enough to leave on (a few
 * performance.now() calls a step); the e2e bench reads it to split a step's start-to-close into the step's own
 * work and the recorder's.
 */
export class RecorderTimings {
  /** Activity attempts that went through the recording interceptor. */
  activities = 0;
  /** Time inside the recording interceptor, the activity itself included. */
  interceptorMs = 0;
  /** Time inside the activity function (what the interceptor wraps), its own tape flushes included. */
  activityMs = 0;
  /** Time the recorder added: the interceptor's own work outside the activity plus every tape flush. */
  recorderMs = 0;
  /** Buffered frames written under the tape lock (each is one lock round trip). */
  flushes = 0;
  /** Time of those writes: queueing, lock file, appends and any fsync. */
  flushMs = 0;
  /** fsyncs (fdatasync) of a tape. */
  syncs = 0;
  syncMs = 0;
  /** Barriers after local steps: one fsync covering every local step of a workflow task. */
  barriers = 0;

  reset(): void {
    this.activities = 0;
    this.interceptorMs = 0;
    this.activityMs = 0;
    this.recorderMs = 0;
    this.flushes = 0;
    this.flushMs = 0;
    this.syncs = 0;
    this.syncMs = 0;
    this.barriers = 0;
  }

  snapshot(): Omit<RecorderTimings, 'reset' | 'snapshot'> {
    const { activities, interceptorMs, activityMs, recorderMs, flushes, flushMs, syncs, syncMs, barriers } =
      this;
    return { activities, interceptorMs, activityMs, recorderMs, flushes, flushMs, syncs, syncMs, barriers };
  }
}
