import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { BlobRef, decodeBlob, readTape, verifyTape } from '../../src/recorder/tape';
import { activityInfo, RUN, recorder, tempDir } from './helpers';

const KEY = 'sk-proj-FAKEeffectKey0123456789';

describe('side effects go on the tape through ActivityTape.effect', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('writes mutation and decision frames of the step, bulky parts as blobs, secrets redacted', async () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const rec = recorder(t.dir);
    const tape = rec.forActivity(activityInfo('7', 2, 'toolStep'), 3);
    tape.start({ step: 3, name: 'write_ledger', args: {} }, []);
    const content = new TextEncoder().encode(`refund 120.00 token=${KEY}\n`);
    tape.effect('fs.mutation', async (s) => ({
      op: 'write',
      path: 'ledger.txt',
      after: await s.putValue(tape.redact(content), 3),
    }));
    tape.effect('sql.mutation', () => ({
      statement: 'update accounts set balance = balance - ? where id = ?',
      params: [120, 'c-1'],
      rowsAffected: 1,
      note: `auth ${KEY}`,
    }));
    tape.effect('rollback', () => ({ reason: 'gate refused' }));
    await tape.complete({ ok: true });
    await rec.close();

    const file = rec.store.pathFor(RUN.workflowId, RUN.runId);
    expect(verifyTape(file).ok).toBe(true);
    expect(readFileSync(file).toString('latin1')).not.toContain(KEY);
    const read = readTape(file);
    const kinds = read.frames.filter((f) => f.kind !== 'blob').map((f) => f.kind);
    expect(kinds).toEqual(['activity.start', 'fs.mutation', 'sql.mutation', 'rollback', 'activity.complete']);
    const fs = read.frames.find((f) => f.kind === 'fs.mutation')!;
    expect(fs.step).toBe(3);
    const payload = fs.payload as { activityId: string; attempt: number; path: string; after: BlobRef };
    expect(payload).toMatchObject({ activityId: '7', attempt: 2, path: 'ledger.txt' });
    expect(payload.after).toBeInstanceOf(BlobRef);
    const stored = decodeBlob(read.blobs.get(payload.after.hash)!) as Uint8Array;
    expect(new TextDecoder().decode(stored)).toMatch(/^refund 120\.00 token=\[REDACTED/);
    const sql = read.frames.find((f) => f.kind === 'sql.mutation')!.payload as Record<string, unknown>;
    expect(sql).toMatchObject({ params: [120, 'c-1'], rowsAffected: 1, attempt: 2 });
    expect(String(sql.note)).not.toContain(KEY);
  });
});
