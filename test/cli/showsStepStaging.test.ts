/** `jbx show` says, for a retried Shadow Booth tool step, which attempt's staging counted. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TapeRecorder } from '../../src/recorder';
import { activityInfo, RUN, tempDir } from '../recorder/helpers';

const ROOT = path.resolve(__dirname, '../..');

function jbx(...args: string[]) {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'src/cli/bin.js'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('jbx show prints which attempt of a tool step staged what counted', () => {
  const tmp = tempDir('jbx-show-staging-');
  afterAll(() => tmp.cleanup());

  it('names the counted attempt, a reused checkpoint and a discarded partial staging', async () => {
    const rec = new TapeRecorder({ dir: tmp.dir, agentCodeHash: RUN.agentCodeHash, fsync: 'none' });
    const step = async (
      id: string,
      n: number,
      staging: { attempt: number; reused: boolean; discarded?: number },
    ) => {
      const tape = rec.forActivity(activityInfo(id, n, 'toolStep'), Number(id));
      tape.start({ step: Number(id), name: 'record_payment', args: {} }, []);
      await tape.toolCall('record_payment', {});
      tape.toolResult('recorded', staging);
      await tape.complete('recorded');
    };
    await step('0', 9, { attempt: 7, reused: true });
    await step('1', 2, { attempt: 2, reused: false, discarded: 1 });
    await rec.close();
    const file = rec.store.pathFor(RUN.workflowId, RUN.runId);

    const shown = jbx('show', file);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n').filter((l) => l.includes('tool.result'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('[staging of attempt 7 counted; reused from its checkpoint]');
    expect(lines[1]).toContain("[staging of attempt 2 counted; attempt 1's partial staging discarded]");

    const json = JSON.parse(jbx('show', file, '--json').stdout) as {
      frames: { kind: string; payload: unknown }[];
    };
    expect(
      json.frames
        .filter((f) => f.kind === 'tool.result')
        .map((f) => (f.payload as { staging: unknown }).staging),
    ).toEqual([
      { attempt: 7, reused: true },
      { attempt: 2, reused: false, discarded: 1 },
    ]);
  });
});
