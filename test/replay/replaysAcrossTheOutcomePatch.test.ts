import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadStoredHistory } from '../../replay';
import { runJbx } from './jbx';

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
  };
}

describe('agentWorkflow records its outcome once, and runs recorded before that still replay', () => {
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
});
