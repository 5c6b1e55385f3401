/**
 * SIGKILL the worker at every named point inside a tool step, one after the other across processes (before
 * staging; mid-staging after the files, the SQL, the MCP and the shell part; after staging before the
 * checkpoint; between the SQL checkpoint row and the step-log record; mid-append, after the append, after its
 * fdatasync; after the checkpoint; after the step completed), let Temporal retry on a fresh worker each time,
 * let the run commit, and check the real ledger, the SQLite or PostgreSQL tables and the MCP outbox hold each
 * effect exactly once, and that the tape says which attempt's staging counted. The notify MCP server runs in its
 * own process over stdio, so each death also cuts a real transport mid-step.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporalConfigFromEnv } from '../../../servers/devserver/config';
import { readTape } from '../../../src/recorder/tape';
import { startAgent } from '../../../src/temporal';
import { readTimeline } from '../../../src/timetravel/replay';
import { type PostgresCluster, startPostgres } from '../../support/postgres';
import { processesMentioning, within } from '../../support/processes';
import { expectedWorld, prepareStepWorld, readWorld } from '../../support/stepWorld';
import { spawnWorker, type WorkerProcess } from '../../support/workerProcess';
import type { BoothScenario } from './fixtures/boothWorkflows';

const ENTRY = 'test/temporal/workflow/fixtures/stepFaultWorker.ts';

/**
 * In the order a step passes them: the first step's attempts 1-8 each die at the next one (8 reuses 7's
 * checkpoint and dies after completing), then the second step's first attempt dies between committing its
 * SQL with the checkpoint row and appending its checkpoint record to the step log, so its retry reuses the row;
 * that retry dies halfway through writing the record (a torn tail), the next one once the record is written
 * but not fdatasynced (so the one after finds it in the log and reuses it), and that one after its fdatasync.
 */
const STEP_CRASH_POINTS = [
  'step:begun',
  'files:stage:manifest-written',
  'sql:stage:statement-staged',
  'mcp:stage:escrowed',
  'shell:stage:staged',
  'step:staged',
  'step:checkpointed',
  'step:completed',
  'step:sql-checkpointed',
  'files:steplog:mid-append',
  'files:steplog:appended',
  'files:steplog:synced',
];

describe('a tool step killed at every point stages each effect exactly once', () => {
  let connection: Connection;
  let pg: PostgresCluster;
  const workers: WorkerProcess[] = [];
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-step-faults-'));

  beforeAll(async () => {
    connection = await Connection.connect({ address: temporalConfigFromEnv().address });
    pg = await startPostgres();
  });

  afterAll(async () => {
    for (const w of workers) await w.kill();
    await connection?.close();
    await pg?.stop();
  });

  it.concurrent.each((process.env.JBX_STEP_FAULT_DBS ?? 'sqlite3,pg').split(','))(
    'on %s',
    async (client) => {
      const world = await prepareStepWorld(path.join(base, client), client === 'pg' ? pg.url : undefined);
      const log = path.join(base, `${client}.crashes`);
      const env: Record<string, string> = {
        JUKEBOX_WORLD: JSON.stringify(world),
        JUKEBOX_CRASH_PLAN: STEP_CRASH_POINTS.join(','),
        JUKEBOX_CRASH_LOG: log,
        JUKEBOX_TASK_QUEUE: `step-faults-${client}-${Date.now().toString(36)}`,
        JUKEBOX_BUNDLE_FILE: path.join(base, 'workflows.bundle.js'),
      };
      const handle = await startAgent<BoothScenario, unknown>(
        'boothAgent',
        {
          stage: [
            { tool: 'record_payment', args: { ref: 'a' } },
            { tool: 'record_payment', args: { ref: 'b' } },
          ],
        },
        {
          connection,
          namespace: temporalConfigFromEnv().namespace,
          taskQueue: env.JUKEBOX_TASK_QUEUE!,
          runOptions: { heartbeatTimeoutMs: 4_000, initialRetryIntervalMs: 100, maximumAttempts: 12 },
        },
      );
      let done = false;
      const outcome = handle.result().finally(() => {
        done = true;
      });
      // A supervisor: each worker that dies at its crash point is replaced, until the run ends.
      const deaths: (NodeJS.Signals | null)[] = [];
      const mine: WorkerProcess[] = [];
      const supervise = (async () => {
        while (!done) {
          const w = await spawnWorker(env, 90_000, ENTRY);
          workers.push(w);
          mine.push(w);
          const signal = await new Promise<NodeJS.Signals | null>((resolve) => {
            w.child.once('exit', (_code, s) => resolve(s));
            void outcome.finally(() => resolve(null)).catch(() => resolve(null));
          });
          if (signal === null) break;
          deaths.push(signal);
        }
      })();
      const result = await outcome.catch((err: unknown) => err);
      await supervise;
      for (const w of mine) await w.kill();
      const report = (result as { output?: { sql?: { statements: number }; mcp?: { applied: number } } })
        .output;
      // Two steps' statements (UPDATE, INSERT each) and notifications, committed once each.
      expect(report?.sql?.statements, `${String(result)}\n${workers.map((w) => w.output()).join('\n')}`).toBe(
        4,
      );
      expect(report?.mcp?.applied).toBe(2);
      expect(deaths).toEqual(STEP_CRASH_POINTS.map(() => 'SIGKILL'));
      // Each worker ran the notify server as a child over stdio; none outlived the transport its worker's
      // death cut (the server ends when its stdin closes).
      expect(await within(10_000, () => processesMentioning(world.outbox).length === 0)).toBe(true);
      expect(fs.readFileSync(log, 'utf8')).toBe(String(STEP_CRASH_POINTS.length));

      // Each effect exactly once: the append, the move, the delete, n = n + 1, the INSERT without a natural key,
      // the notify_customer call and the shell command's append, for the killed step and the one after it.
      expect(await readWorld(world)).toEqual(expectedWorld(['a', 'b']));
      expect(fs.readdirSync(world.staging)).toEqual([]);

      // The first step's last attempt reused an earlier attempt's checkpoint (without extra timeouts on a loaded
      // machine: attempt 9 reusing 7's, since 6 died after staging and 7 after its checkpoint); the second
      // step's retry reused its first attempt's checkpoint row.
      const tapes = path.join(world.dir, 'tapes');
      const tapeFile = path.join(tapes, fs.readdirSync(tapes).find((n) => n.endsWith('.jbx'))!);
      const tape = readTape(tapeFile);
      const results = tape.frames
        .filter((f) => f.kind === 'tool.result')
        .map((f) => f.payload as { staging: { attempt: number; reused: boolean }; attempt: number });
      expect(results).toHaveLength(2);
      expect(results.map((r) => r.staging.reused)).toEqual([true, true]);
      expect(results[0]!.staging.attempt).toBeGreaterThanOrEqual(7);
      expect(results[0]!.staging.attempt).toBeLessThan(results[0]!.attempt);
      expect(results[1]!.staging.attempt).toBeLessThan(results[1]!.attempt);
      // An attempt that died after flushing its effect frames left them on the tape beside the counted
      // attempt's; the timeline (what a fork restores) takes each step's counted effects, once.
      const appends = (frames: readonly { kind?: string; payload: unknown }[]) =>
        frames.filter((f) => f.kind === 'fs.mutation' && (f.payload as { op?: string }).op === 'append');
      expect(appends(tape.frames).length).toBeGreaterThan(2);
      const t = readTimeline(tapeFile);
      expect(
        t.steps.map((s) => appends(s.effects).map((e) => (e.payload as { attempt: number }).attempt)),
      ).toEqual(results.map((r) => [r.staging.attempt]));
    },
    480_000,
  );
});
