/**
 * The one way a workflow reaches the recorder without an activity: a sink, which the worker calls after the
 * workflow's activation and before that activation's completion goes back to the server.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { Sinks } from '@temporalio/workflow';
import type { RecordOutcomeInput } from '../../recorder/observations';
import type { TapeRecorder } from '../../recorder/recorder';

export interface TapeSinks extends Sinks {
  jukeboxTape: {
    /**
     * Called by the agent workflow before the command that ends a workflow task in which local steps ran: their
     * tape frames are fsynced before the task's completion records their results in the history. `runKey`: the
     * run key of a later segment of a run that continued as new, whose tape is its first segment's.
     */
    barrier(runKey?: string): void;
    /**
     * Called when a plain Temporal workflow (not a Jukebox agent) ends, by the tape outcome interceptors: its
     * outcome is written and its tape sealed, as an agent's recordOutcome activity does.
     */
    outcome(input: RecordOutcomeInput): void;
  };
}

/** Registered on every Jukebox worker, so a workflow's barrier call always finds it (a no-op without tapes). */
export function tapeSinks(recorder: TapeRecorder | undefined): InjectedSinks<TapeSinks> {
  return {
    jukeboxTape: {
      barrier: {
        async fn(info, runKey) {
          await recorder?.barrier(info.workflowId, runKey ?? info.runId);
        },
        // A replayed task's local steps were recorded (and made durable) when it first ran.
        callDuringReplay: false,
      },
      outcome: {
        async fn(info, input) {
          await recorder?.recordOutcome(
            {
              workflowExecution: { workflowId: info.workflowId, runId: info.runId },
              workflowType: info.workflowType,
              taskQueue: info.taskQueue,
            },
            input,
          );
        },
        callDuringReplay: false,
      },
    },
  };
}
