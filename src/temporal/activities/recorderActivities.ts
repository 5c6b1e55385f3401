import { Context } from '@temporalio/activity';
import type { RecordOutcomeInput } from '../../recorder/observations';
import type { TapeRecorder } from '../../recorder/recorder';

/**
 * The recorder's own activity: the workflow calls it last, with the outcome, so the tape is sealed by a step
 * Temporal retries like any other. Without a recorder (tape: false) it does nothing.
 */
export function createRecorderActivities(recorder: TapeRecorder | undefined) {
  return {
    async recordOutcome(input: RecordOutcomeInput): Promise<{ sealed: boolean }> {
      if (!recorder) return { sealed: false };
      const { sealed } = await recorder.recordOutcome(Context.current().info, input);
      return { sealed };
    },
  };
}

export type RecorderActivities = ReturnType<typeof createRecorderActivities>;
