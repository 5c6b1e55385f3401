import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StagedWorkspace } from '../../../src/booth';
import { BoothFiles } from '../../../src/booth/shadowBooth';
import { StagedSql } from '../../../src/booth/sql';
import { TapeRecorder } from '../../../src/recorder';
import { runWithActivityTape } from '../../../src/recorder/activityTape';
import { restoreWorld } from '../../../src/timetravel/fork';
import { readTimeline } from '../../../src/timetravel/replay';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'jbx-fork-world-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const RUN = { workflowId: 'wf-world', runId: 'run-1', workflowType: 'researchAgent', taskQueue: 'q' };
const info = (step: number) => ({
  workflowExecution: { workflowId: RUN.workflowId, runId: RUN.runId },
  workflowType: RUN.workflowType,
  taskQueue: RUN.taskQueue,
  activityId: `a${step}`,
  attempt: 1,
  activityType: 'toolStep',
});

describe('a fork starts from the world as it was at its fork frame', () => {
  it('replays the parent’s staged file writes and SQL statements before the fork step from the tape, not from today’s disk', async () => {
    const root = path.join(tmp, 'root');
    mkdirSync(root);
    writeFileSync(path.join(root, 'notes.txt'), 'v1 on disk');
    const db = path.join(tmp, 'app.sqlite');
    writeFileSync(db, ''); // an empty file is an empty SQLite database
    const rec = new TapeRecorder({
      dir: path.join(tmp, 'tapes'),
      fsync: 'none',
      agentCodeHash: 'blake3:test',
    });
    const ws = await StagedWorkspace.open({ root, stagingDir: path.join(tmp, 'parent-staging', 'files') });
    const files = new BoothFiles(ws);
    const sql = await StagedSql.open({
      client: 'sqlite3',
      connection: db,
      stagingDir: path.join(tmp, 'parent-staging', 'sql'),
    });

    // The parent run: step 0 creates a table and writes two files, step 1 rewrites one and adds a row.
    const step = async (n: number, work: () => Promise<void>) => {
      const tape = rec.forActivity(info(n), n);
      tape.start({ step: n, name: 'edit', args: { n } }, []);
      await tape.toolCall('edit', { n });
      await runWithActivityTape(tape, work);
      tape.toolResult('ok');
      await tape.complete('ok');
    };
    await step(0, async () => {
      await sql.query('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
      await sql.query('INSERT INTO notes (body) VALUES (?)', ['first']);
      await files.writeFile('notes.txt', 'v2 staged at step 0');
      await files.mkdir('drafts');
      await files.writeFile('drafts/a.md', '# draft');
    });
    await step(1, async () => {
      await files.writeFile('notes.txt', 'v3 staged at step 1');
      await sql.query('INSERT INTO notes (body) VALUES (?)', ['second']);
    });
    await sql.close();
    await rec.close();
    const tapeFile = rec.store.pathFor(RUN.workflowId, RUN.runId);
    const before = readFileSync(tapeFile);
    // Today's disk has moved on; the fork must not see it.
    writeFileSync(path.join(root, 'notes.txt'), 'edited today');

    const t = readTimeline(tapeFile);
    expect(t.steps.map((s) => s.effects.map((e) => e.kind))).toEqual([
      ['sql.mutation', 'sql.mutation', 'fs.mutation', 'fs.mutation', 'fs.mutation'],
      ['fs.mutation', 'sql.mutation'],
    ]);

    const restoreAt = async (forkStep: number) => {
      const dir = path.join(tmp, `fork-at-${forkStep}`);
      const forkFiles = await StagedWorkspace.open({ root, stagingDir: path.join(dir, 'files') });
      const forkSql = await StagedSql.open({
        client: 'sqlite3',
        connection: db,
        stagingDir: path.join(dir, 'sql'),
      });
      const report = await restoreWorld(t, forkStep, { files: forkFiles, sql: forkSql });
      const table = await forkSql.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'notes'",
      );
      const rows = table.rows.length
        ? (await forkSql.query('SELECT body FROM notes ORDER BY id')).rows.map((r) => r.body)
        : null;
      await forkSql.close();
      return { report, rows, notes: await forkFiles.readFile('notes.txt', 'utf8'), forkFiles };
    };

    const at1 = await restoreAt(1);
    expect(at1.notes).toBe('v2 staged at step 0');
    expect(await at1.forkFiles.readFile('drafts/a.md', 'utf8')).toBe('# draft');
    expect(at1.rows).toEqual(['first']);
    expect(at1.report).toEqual({ files: 3, statements: 2 });

    const at2 = await restoreAt(2);
    expect(at2.notes).toBe('v3 staged at step 1');
    expect(at2.rows).toEqual(['first', 'second']);

    const at0 = await restoreAt(0);
    expect(at0.notes).toBe('edited today');
    expect(at0.report).toEqual({ files: 0, statements: 0 });
    expect(at0.rows).toBeNull();
    // The real files and the parent tape are untouched by restoring.
    expect(readFileSync(path.join(root, 'notes.txt'), 'utf8')).toBe('edited today');
    expect(readFileSync(tapeFile).equals(before)).toBe(true);
  });
});
