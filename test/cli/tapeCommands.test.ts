import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TapeRecorder } from '../../src/recorder';
import { activityInfo, RUN, recordLlmStep, response, tempDir } from '../recorder/helpers';

const ROOT = path.resolve(__dirname, '../..');

function jbx(...args: string[]) {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'src/cli/bin.js'), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('jbx ls, show and verify', () => {
  const tmp = tempDir('jbx-cli-');
  let good: string;

  beforeAll(async () => {
    const rec = new TapeRecorder({ dir: tmp.dir, agentCodeHash: RUN.agentCodeHash, fsync: 'none' });
    const request = {
      provider: 'openai' as const,
      model: 'gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'hello' }],
    };
    await recordLlmStep(rec, 0, request, response('Hi there, how can I help?'));
    const tool = rec.forActivity(activityInfo('2', 1, 'toolStep'), 1);
    tool.start({ step: 1, name: 'lookup_fact', args: { topic: 'moon' } }, []);
    await tool.toolCall('lookup_fact', { topic: 'moon' });
    tool.toolResult('384400 km');
    await tool.complete('384400 km');
    const info = activityInfo('3', 1, 'recordOutcome');
    await rec.recordOutcome(info, { step: 2, status: 'completed', result: { answer: 'done' } });
    await rec.close();
    good = rec.store.pathFor(RUN.workflowId, RUN.runId);
  });
  afterAll(() => tmp.cleanup());

  it('ls --json lists each recording with its steps, frames, outcome, tokens and size', () => {
    const r = jbx('ls', '--dir', tmp.dir, '--json');
    expect(r.code, r.stderr).toBe(0);
    const list = JSON.parse(r.stdout);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      id: path.basename(good, '.jbx'),
      workflow: 'researchAgent',
      workflowId: RUN.workflowId,
      steps: 2,
      outcome: 'completed',
      tokens: 17,
      // 12 input + 5 output tokens of gpt-4o-mini at $0.15 / $0.60 per million.
      cost: (12 * 0.15 + 5 * 0.6) / 1e6,
      bytes: readFileSync(good).byteLength,
    });
    expect(list[0].frames).toBeGreaterThan(10);
    const table = jbx('ls', '--dir', tmp.dir).stdout;
    expect(table).toMatch(/^id\s+workflow\s+started\s+steps/);
    // The sum of two prices is 0.0000048000000000000004 in binary floats: the table shows the dollars.
    expect(table).toContain('$0.0000048');
    expect(table).not.toContain('00000000004');
  });

  it('show prints frames with blobs resolved; --frame and --step narrow it', () => {
    const all = jbx('show', good);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('llm.request');
    expect(all.stdout).toContain('lookup_fact({"topic":"moon"})');
    expect(all.stdout).toContain('"Hi there, how can I help?"');
    expect(all.stdout).toContain('12 in / 5 out tokens, $0.0000048]');

    const json = JSON.parse(jbx('show', good, '--step', '1', '--json').stdout);
    expect(json.frames.map((f: { kind: string }) => f.kind)).toEqual([
      'activity.start',
      'tool.call',
      'tool.result',
      'activity.complete',
    ]);
    expect(json.frames[2].payload.output).toBe('384400 km');
    expect(json.frames[0].payload.input).toEqual({ step: 1, name: 'lookup_fact', args: { topic: 'moon' } });

    const request = JSON.parse(jbx('show', good, '--json').stdout).frames.find(
      (f: { kind: string }) => f.kind === 'llm.request',
    );
    expect(request.payload.messages).toEqual([{ role: 'user', content: 'hello' }]);
    const one = JSON.parse(jbx('show', good, '--frame', String(request.index), '--json').stdout);
    expect(one.frames).toHaveLength(1);
  });

  it('verify exits 0 on a sound tape', () => {
    const r = jbx('verify', good, '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, sealed: true, file: good });
  });

  it('verify exits 3 on a damaged tape, naming the file, the first bad frame, its offset and what can be recovered', () => {
    const bad = path.join(tmp.dir, 'damaged.jbx');
    copyFileSync(good, bad);
    const bytes = readFileSync(bad);
    bytes[bytes.byteLength - 300]! ^= 0xff;
    writeFileSync(bad, bytes);
    const r = jbx('verify', bad, '--json');
    expect(r.code).toBe(3);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(false);
    expect(report.firstBadFrame).toEqual(expect.any(Number));
    expect(r.stderr).toContain(bad);
    expect(r.stderr).toContain(`first bad frame ${report.firstBadFrame} at byte ${report.offset}`);
    expect(r.stderr).toContain(`${report.recoverableFrames} frames before it verified`);
    // show still prints what verified, then reports the damage the same way.
    const shown = jbx('show', bad);
    expect(shown.code).toBe(3);
    expect(shown.stderr).toContain('is damaged');
  });

  it('says so, with exit 3, for a file that is not a tape or of an unknown version', () => {
    const notTape = path.join(tmp.dir, 'notes.jbx');
    writeFileSync(notTape, 'just some text, not a tape at all');
    const r = jbx('verify', notTape);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${notTape} is not a Jukebox tape`);
    expect(r.stdout).toBe('');

    const future = path.join(tmp.dir, 'future.jbx');
    const bytes = readFileSync(good);
    bytes.writeUInt16LE(9, 8);
    writeFileSync(future, bytes);
    const v = jbx('show', future);
    expect(v.code).toBe(3);
    expect(v.stderr).toContain('format version 9');
    expect(v.stderr).toContain(future);
  });

  it('exits 2 with the file named for a missing tape, and for bad usage', () => {
    const missing = jbx('verify', path.join(tmp.dir, 'nope.jbx'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
    expect(missing.stderr).toContain('nope.jbx');
    expect(jbx('show').code).toBe(2);
    expect(jbx('show', good, '--frame', 'x').code).toBe(2);
    expect(jbx('show', good, '--frame', '1', '--step', '1').code).toBe(2);
    expect(jbx('ls', 'extra').code).toBe(2);
    const flag = jbx('verify', good, '--bogus');
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('usage: jbx verify');
  });
});
