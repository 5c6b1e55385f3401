import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyTape } from '../../../src/recorder/tape';
import { loadStoredHistory } from '../../../src/temporal';
import { runJbx } from './jbx';
import { QUESTION, recordingSetup } from './recordedRun';

const HISTORIES = path.join(__dirname, 'fixtures', 'histories');

/** A copy of a recorded run (tape, sidecar, history) in a folder of its own. */
function recorded(name: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `jbx-${name}-`));
  for (const f of readdirSync(path.join(HISTORIES, name)))
    cpSync(path.join(HISTORIES, name, f), path.join(dir, f));
  return path.join(dir, 'research.jbx');
}

function outcomeActivities(tape: string) {
  const { history } = loadStoredHistory(tape);
  const events = history.events ?? [];
  return {
    recordOutcome: events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'recordOutcome',
    ).length,
    // A patch marker's details carry the patch id as a JSON payload.
    markers: events.flatMap((e) =>
      Object.values(e.markerRecordedEventAttributes?.details ?? {}).flatMap((p) =>
        (p.payloads ?? []).map((x) => Buffer.from(x.data ?? []).toString('utf8')),
      ),
    ),
    // A local activity's marker names its activity type in its data payload.
    localRecordOutcome: events.filter(
      (e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
        (e.markerRecordedEventAttributes.details?.data?.payloads ?? []).some((x) =>
          Buffer.from(x.data ?? [])
            .toString('utf8')
            .includes('"recordOutcome"'),
        ),
    ).length,
  };
}

describe('agentWorkflow records its outcome once, as a local activity, and runs recorded before either change still replay', () => {
  it('a history recorded before the fix holds two recordOutcome activities and replays deterministically', async () => {
    const tape = recorded('outcome-recorded-twice');
    const seen = outcomeActivities(tape);
    expect(seen.recordOutcome).toBe(2);
    expect(seen.markers.join()).not.toContain('jukebox.record-outcome-once');
    const r = await runJbx(['replay', '--temporal', tape, '--json'], { offline: true });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ deterministic: true });
  });

  it('a history recorded after the fix holds one recordOutcome and the patch marker, and replays deterministically', async () => {
    const tape = recorded('outcome-recorded-once');
    const seen = outcomeActivities(tape);
    expect(seen.recordOutcome).toBe(1);
    expect(seen.markers.join()).toContain('jukebox.record-outcome-once');
    const r = await runJbx(['replay', '--temporal', tape, '--json'], { offline: true });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ deterministic: true });
  });

  it('a run recorded now seals its tape with a local activity in its last workflow task, and replays deterministically', async () => {
    const setup = await recordingSetup();
    try {
      const { tapeFile, result } = await setup.record({ question: QUESTION });
      expect(result).toMatchObject({ output: { answer: expect.any(String) } });
      const seen = outcomeActivities(tapeFile);
      expect(seen.recordOutcome).toBe(0);
      expect(seen.localRecordOutcome).toBe(1);
      expect(seen.markers.join()).toContain('jukebox.outcome-local-activity');
      // The marker and the run's completion went to the history in one workflow task completion.
      const events = loadStoredHistory(tapeFile).history.events ?? [];
      const completedBy = events.find((e) => e.workflowExecutionCompletedEventAttributes)
        ?.workflowExecutionCompletedEventAttributes?.workflowTaskCompletedEventId;
      const outcomeMarker = events.filter(
        (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
      );
      expect(String(outcomeMarker.at(-1)?.markerRecordedEventAttributes?.workflowTaskCompletedEventId)).toBe(
        String(completedBy),
      );
      expect(verifyTape(tapeFile)).toMatchObject({ ok: true, sealed: true });
      const r = await runJbx(['replay', '--temporal', tapeFile, '--json'], { offline: true });
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ deterministic: true });
    } finally {
      await setup.close();
    }
  });
});
