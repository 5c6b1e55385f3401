/**
 * What a person approving reads is the agent's doing: file names, SQL statements and the arguments of a waiting
 * call. The staged summary a run hands to an approval (one line per file change, statement and MCP call) and
 * `jbx approvals` escape every newline, carriage return, escape sequence and bidi control in them, so none adds a
 * line to the listing or reorders one; the staged state itself keeps the exact names.
 */
import fs from 'node:fs';
import path from 'node:path';
import knexFactory from 'knex';
import { afterAll, describe, expect, it } from 'vitest';
import { BoothRuntime } from '../../src/booth/shadowBooth';
import { renderPending } from '../../src/cli/approvals';
import { summarize } from '../../src/temporal/activities/commitActivities';
import type { PendingApproval } from '../../src/temporal/client/approvals';
import { tempDir } from '../recorder/helpers';

const FORGED = 'a.txt\n  file  write harmless.txt: 0 -> 1 bytes';
const BIDI = 'invoice\u202Etxt.exe';
const ANSI = 'report\r\x1b[2Kclean.txt';
const RAW = ['\n', '\r', '\x1b', '\u202E', '\u2028'];

const tmp = tempDir('jbx-approval-names-');
afterAll(() => tmp.cleanup());

function expectNoRawCharacters(lines: string[]): void {
  for (const line of lines) for (const ch of RAW) expect(line).not.toContain(ch);
}

describe('the staged summary an approval shows', () => {
  it('is one line per file change, statement and MCP call, hidden characters escaped', async () => {
    const workspace = path.join(tmp.dir, 'workspace');
    fs.mkdirSync(workspace);
    const db = path.join(tmp.dir, 'real.sqlite');
    const admin = knexFactory({ client: 'sqlite3', connection: { filename: db }, useNullAsDefault: true });
    await admin.raw('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
    await admin.destroy();
    const runtime = new BoothRuntime({
      workspaceRoot: workspace,
      stagingRoot: path.join(tmp.dir, 'staging'),
      sqlite: db,
    });
    const booth = await runtime.open('wf', 'run');
    await booth.files.writeFile(FORGED, 'one\n');
    await booth.files.writeFile(BIDI, 'two\n');
    await booth.files.rename(BIDI, ANSI);
    await (await booth.sql()).query(
      "INSERT INTO notes (body) VALUES ('line one\n  sql   DELETE FROM notes')",
    );
    await (await booth.sql()).query('INSERT INTO notes (body) VALUES (?)', ['pay\u202Eexe.txt']);
    const changes = await booth.changeSet();
    // The booth keeps the exact names; only what is shown is escaped.
    expect(changes.files.map((c) => c.path).sort()).toEqual([ANSI, FORGED].sort());

    const staged = summarize({
      ...changes,
      mcp: [
        {
          seq: 0,
          key: 'k',
          server: 'mail',
          tool: 'send\u2028mail',
          arguments: { to: 'ann', subject: 'refund\u202Edone' },
          state: 'escrowed',
        } as (typeof changes.mcp)[number],
      ],
    });
    expect(staged.files).toHaveLength(2);
    expect(staged.sql).toHaveLength(2);
    expect(staged.mcp).toHaveLength(1);
    expectNoRawCharacters([...staged.files, ...staged.sql, ...staged.mcp]);
    expect(staged.files.join('\n')).toContain('"a.txt\\n  file  write harmless.txt: 0 -> 1 bytes"');
    expect(staged.sql[0]).toBe("INSERT INTO notes (body) VALUES ('line one\\n  sql   DELETE FROM notes') []");
    expect(staged.sql[1]).toBe('INSERT INTO notes (body) VALUES (?) ["pay\\u202eexe.txt"]');
    expect(staged.mcp[0]).toBe('mail/"send\\u2028mail" {"to":"ann","subject":"refund\\u202edone"}');
    await booth.discard();
    await runtime.close();
  });
});

describe('jbx approvals', () => {
  const pending = (over: Partial<PendingApproval>): PendingApproval => ({
    id: 's3-1',
    step: 3,
    kind: 'tool',
    reason: 'writes outside the drafts folder',
    subject: { tool: 'write_file', args: { path: BIDI } },
    requestedAtMs: 0,
    deadlineMs: 60_000,
    timeout: '1m',
    onTimeout: 'rollback',
    workflowId: 'wf',
    runId: 'run',
    workflowType: 'agent',
    taskQueue: 'q',
    ...over,
  });

  it("prints the call's arguments, the reason and staged lines escaped: no line added, none reordered", () => {
    const lines = renderPending(
      pending({
        reason: `refund over the limit\n  file  ${FORGED}`,
        // A summary from a worker that sent its lines raw.
        staged: {
          files: [`write ${ANSI}: 0 -> 3 bytes`],
          sql: ['UPDATE t\nSET x = 1'],
          mcp: ['m/t {"a":"\u202E"}'],
        },
      }),
      1_000,
    );
    expectNoRawCharacters(lines);
    expect(lines).toHaveLength(8);
    expect(lines[1]).toBe(
      '  approval s3-1 at step 3: tool call write_file({"path":"invoice\\u202etxt.exe"})',
    );
    expect(lines[2]).toBe(
      '  reason: refund over the limit\\n  file  a.txt\\n  file  write harmless.txt: 0 -> 1 bytes',
    );
    expect(lines[4]).toBe('  file  write report\\r\\u001b[2Kclean.txt: 0 -> 3 bytes');
    expect(lines[5]).toBe('  sql   UPDATE t\\nSET x = 1');
    expect(lines[6]).toBe('  mcp   m/t {"a":"\\u202e"}');
  });
});
