import { Context } from '@temporalio/activity';
import type { RecordOutcomeInput, RecordSegmentInput } from '../../recorder/observations';
import type { TapeRecorder } from '../../recorder/recorder';
import { currentRunKey } from './activityRun';

/**
 * The recorder's own activities: the workflow calls recordOutcome last, with the outcome, so the tape is sealed
 * by a step Temporal retries like any other, and recordSegment before it continues as new. Without a recorder
 * (tape: false) they do nothing.
 */
export function createRecorderActivities(recorder: TapeRecorder | undefined) {
  return {
    async recordOutcome(input: RecordOutcomeInput): Promise<{ sealed: boolean }> {
      if (!recorder) return { sealed: false };
      const { sealed } = await recorder.recordOutcome(Context.current().info, input, currentRunKey());
      return { sealed };
    },

    async recordSegment(input: RecordSegmentInput): Promise<void> {
      if (!recorder) return;
      await recorder.recordSegment(Context.current().info, input, currentRunKey());
    },
  };
}

export type RecorderActivities = ReturnType<typeof createRecorderActivities>;
