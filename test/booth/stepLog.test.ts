/**
 * The step log that holds tool-step checkpoints: a step dying mid-append, after the append, or after its
 * fdatasync stages its append exactly once; the reader takes a torn tail for the end of the log and refuses a
 * bad record before it, a foreign or newer header and a file shorter than its header with their own errors; a
 * blob whose name a crash lost comes back from the record that carries it; compaction keeps every step.
 */
import fs from 'node:fs';
import path from 'node:path';
import knexFactory from 'knex';
import { afterEach, beforeEach, expect, it } from 'vitest';
import {
  StagedWorkspace,
  StagingCorruptError,
  StepLogCorruptError,
  StepLogFormatError,
  StepLogTruncatedError,
} from '../../src/booth';
import { COMPACT_RECORDS } from '../../src/booth/layerMerge';
import { BoothRuntime } from '../../src/booth/shadowBooth';
import { MAX_INLINE_BYTES, readStepLog, STEP_LOG_FILE, STEP_LOG_HEADER_BYTES } from '../../src/booth/stepLog';
import { type Fixture, makeFixture } from './helpers';

let fx: Fixture;
let runtime: BoothRuntime;
/** The crash point where the step dies (the fault hook throws there, like a killed worker it stops). */
let dieAt: string | null = null;

beforeEach(() => {
  fx = makeFixture();
  fs.writeFileSync(path.join(fx.root, 'ledger.csv'), 'kind,ref\n');
  dieAt = null;
  runtime = new BoothRuntime({
    workspaceRoot: fx.root,
    stagingRoot: path.join(fx.base, 'staging'),
    faultPoint: (point) => {
      if (point === dieAt) throw new Error(`died at ${point}`);
    },
  });
});
afterEach(async () => {
  await runtime.close();
  fx.cleanup();
});

const filesDir = () => path.join(runtime.runDir('wf', 'run'), 'files');
const logFile = () => path.join(filesDir(), STEP_LOG_FILE);

/** One attempt of a files-only tool step that appends `payment,<ref><extra>` to the ledger. */
async function attempt(id: string, n: number, extra = '') {
  const opened = await runtime.openStep('wf', 'run', { id, attempt: n });
  try {
    if (opened.reused) return { staging: opened.staging, result: opened.reused.result };
    await opened.booth.files.appendFile('ledger.csv', `payment,${id}${extra}\n`);
    const result = `recorded ${id} in attempt ${n}`;
    await opened.booth.completeStep(result);
    return { staging: opened.staging, result };
  } finally {
    await opened.booth.close();
  }
}

async function committedLedger(): Promise<string> {
  const booth = await runtime.open('wf', 'run');
  await booth.commitFiles();
  await booth.removeStaging();
  await booth.close();
  return fs.readFileSync(path.join(fx.root, 'ledger.csv'), 'utf8');
}

it('a step killed mid-append leaves a torn tail that ends the log: the retry stages afresh, once', async () => {
  await attempt('s0', 1);
  dieAt = 'files:steplog:mid-append';
  // A long first attempt, so its torn half is longer than the retry's whole record.
  await expect(attempt('s1', 1, ',note'.repeat(2000))).rejects.toThrow('died at files:steplog:mid-append');
  dieAt = null;
  const torn = readStepLog(logFile())!;
  expect(torn.records.map((r) => r.step)).toEqual(['s0']);
  expect(fs.statSync(logFile()).size).toBeGreaterThan(torn.end);

  const retry = await attempt('s1', 2);
  expect(retry.staging).toEqual({ attempt: 2, reused: false, discarded: 1 });
  const log = readStepLog(logFile())!;
  expect(log.records.map((r) => [r.step, r.attempt])).toEqual([
    ['s0', 1],
    ['s1', 2],
  ]);
  // The torn bytes were cut off before the retry's record: the log ends exactly after it.
  expect(fs.statSync(logFile()).size).toBe(log.end);
  expect(await committedLedger()).toBe('kind,ref\npayment,s0\npayment,s1\n');
});

it.each([
  ['files:steplog:appended', 'appended, not yet fdatasynced'],
  ['files:steplog:synced', 'fdatasynced'],
])('a step killed once its record is %s (%s) counts: the retry reuses it', async (point) => {
  dieAt = point;
  await expect(attempt('s1', 1)).rejects.toThrow(`died at ${point}`);
  dieAt = null;
  const retry = await attempt('s1', 2);
  expect(retry).toEqual({
    staging: { attempt: 1, reused: true },
    result: 'recorded s1 in attempt 1',
  });
  expect(readStepLog(logFile())!.records.map((r) => r.step)).toEqual(['s1']);
  expect(await committedLedger()).toBe('kind,ref\npayment,s1\n');
});

it('a blob whose name a crash lost comes back from the record that carries it', async () => {
  await attempt('s1', 1);
  const [record] = readStepLog(logFile())!.records;
  const [hash, bytes] = [...record!.blobs][0]!;
  expect(bytes.toString()).toBe('kind,ref\npayment,s1\n');
  fs.rmSync(path.join(filesDir(), 'blobs', hash));

  const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: filesDir() });
  expect(await ws.readFile('ledger.csv', 'utf8')).toBe('kind,ref\npayment,s1\n');
  expect(fs.readFileSync(path.join(filesDir(), 'blobs', hash), 'utf8')).toBe('kind,ref\npayment,s1\n');
  // Lost again, then committed: the commit puts carried blobs back before its journal applies them.
  fs.rmSync(path.join(filesDir(), 'blobs', hash));
  await (await StagedWorkspace.open({ root: fx.root, stagingDir: filesDir() })).commit();
  expect(fs.readFileSync(path.join(fx.root, 'ledger.csv'), 'utf8')).toBe('kind,ref\npayment,s1\n');
});

it('a step whose blobs pass the inline limit carries none: their names are fsynced before its record', async () => {
  const opened = await runtime.openStep('wf', 'run', { id: 'big', attempt: 1 });
  await opened.booth.files.writeFile('big.bin', Buffer.alloc(MAX_INLINE_BYTES + 1, 7));
  await opened.booth.files.writeFile('small.txt', 'small');
  await opened.booth.completeStep('done');
  await opened.booth.close();
  const [record] = readStepLog(logFile())!.records;
  expect(record!.blobs.size).toBe(0);
  expect(Object.keys(record!.layer.set).sort()).toEqual(['big.bin', 'small.txt']);
  const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: filesDir() });
  expect((await ws.readFile('big.bin')).equals(Buffer.alloc(MAX_INLINE_BYTES + 1, 7))).toBe(true);
});

it('a SQL step killed before its record is reused from its row, which carries the blobs a crash lost', async () => {
  const db = path.join(fx.base, 'db.sqlite');
  fs.writeFileSync(db, '');
  const k = knexFactory({ client: 'sqlite3', connection: { filename: db }, useNullAsDefault: true });
  await k.raw('CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL)');
  await k.raw("INSERT INTO counters VALUES ('payments', 0)");
  await k.destroy();
  await runtime.close();
  runtime = new BoothRuntime({
    workspaceRoot: fx.root,
    stagingRoot: path.join(fx.base, 'staging'),
    sqlite: db,
    faultPoint: (point) => {
      if (point === dieAt) throw new Error(`died at ${point}`);
    },
  });
  const step = async (n: number) => {
    const opened = await runtime.openStep('wf', 'run', { id: 's1', attempt: n });
    try {
      if (opened.reused) return opened.staging;
      await opened.booth.files.appendFile('ledger.csv', 'payment,s1\n');
      await (await opened.booth.sql()).query('UPDATE counters SET n = n + 1');
      await opened.booth.completeStep('recorded');
      return opened.staging;
    } finally {
      await opened.booth.close();
    }
  };
  dieAt = 'step:sql-checkpointed';
  await expect(step(1)).rejects.toThrow('died at step:sql-checkpointed');
  dieAt = null;
  expect(readStepLog(logFile())).toBe(null);
  // A power loss took the names of the blobs the step wrote: only the row has their bytes.
  fs.rmSync(path.join(filesDir(), 'blobs'), { recursive: true });
  fs.mkdirSync(path.join(filesDir(), 'blobs'));
  expect(await step(2)).toEqual({ attempt: 1, reused: true });
  expect([...readStepLog(logFile())!.records[0]!.blobs.values()].map(String)).toEqual([
    'kind,ref\npayment,s1\n',
  ]);
  expect(await committedLedger()).toBe('kind,ref\npayment,s1\n');
});

it('compaction folds the log into the manifest and every step stays staged once', async () => {
  const n = COMPACT_RECORDS + 3;
  for (let i = 0; i < n; i++) await attempt(`s${i}`, 1);
  const log = readStepLog(logFile())!;
  expect(log.records.length).toBe(3);
  const manifest = JSON.parse(fs.readFileSync(path.join(filesDir(), 'manifest.json'), 'utf8'));
  expect(Object.keys(manifest.steps)).toHaveLength(COMPACT_RECORDS);
  // A retry of a compacted step still finds its checkpoint.
  expect((await attempt('s0', 2)).staging).toEqual({ attempt: 1, reused: true });
  const expected = Array.from({ length: n }, (_, i) => `payment,s${i}\n`).join('');
  expect(await committedLedger()).toBe(`kind,ref\n${expected}`);
});

it('a crash between the compacted manifest and the new log applies no record twice', async () => {
  for (let i = 0; i < COMPACT_RECORDS - 1; i++) await attempt(`s${i}`, 1);
  const full = fs.readFileSync(logFile());
  // A step whose booth read the log before the compaction, completing after it: a new generation.
  const late = await runtime.openStep('wf', 'run', { id: 'late', attempt: 1 });
  await late.booth.files.writeFile('late.txt', 'late');
  await attempt('last', 1);
  expect(readStepLog(logFile())!.records).toEqual([]);
  await late.booth.completeStep('late');
  await late.booth.close();
  // The old log back beside the compacted manifest (killed before the log was replaced): its records are all
  // named by the manifest, so the first step's ledger content does not come back over the last one's.
  const compacted = fs.readFileSync(logFile());
  fs.writeFileSync(logFile(), full);
  const ws = await StagedWorkspace.open({ root: fx.root, stagingDir: filesDir() });
  expect(ws.stepRecord('late')).toBe(null);
  expect((await ws.readFile('ledger.csv', 'utf8')).endsWith('payment,last\n')).toBe(true);
  fs.writeFileSync(logFile(), compacted);
  const expected = [...Array.from({ length: COMPACT_RECORDS - 1 }, (_, i) => `s${i}`), 'last']
    .map((r) => `payment,${r}\n`)
    .join('');
  expect(await committedLedger()).toBe(`kind,ref\n${expected}`);
  expect(fs.readFileSync(path.join(fx.root, 'late.txt'), 'utf8')).toBe('late');
});

it('the reader refuses a bad record before the end, a foreign or newer header and a short file', async () => {
  await attempt('s0', 1);
  await attempt('s1', 1);
  const good = fs.readFileSync(logFile());
  const open = () => StagedWorkspace.open({ root: fx.root, stagingDir: filesDir() });

  // A flipped byte in the last record: a torn tail, the log ends before it.
  const lastTorn = Buffer.from(good);
  lastTorn[lastTorn.length - 3]! ^= 0xff;
  fs.writeFileSync(logFile(), lastTorn);
  expect(readStepLog(logFile())!.records.map((r) => r.step)).toEqual(['s0']);
  // Zeros after the last record (a power loss kept the length, not the bytes): also the end.
  fs.writeFileSync(logFile(), Buffer.concat([good, Buffer.alloc(64)]));
  expect(readStepLog(logFile())!.records.map((r) => r.step)).toEqual(['s0', 's1']);

  // A flipped byte in the first record, with another after it: corruption, named by its offset.
  const middle = Buffer.from(good);
  middle[STEP_LOG_HEADER_BYTES + 20]! ^= 0xff;
  fs.writeFileSync(logFile(), middle);
  const err = await open().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(StepLogCorruptError);
  expect((err as StepLogCorruptError).offset).toBe(STEP_LOG_HEADER_BYTES);
  expect((err as Error).message).toContain(logFile());

  const foreign = Buffer.from(good);
  foreign.write('NOTASTEP', 0, 'ascii');
  fs.writeFileSync(logFile(), foreign);
  await expect(open()).rejects.toBeInstanceOf(StepLogFormatError);
  const newer = Buffer.from(good);
  newer.writeUInt16LE(2, 8);
  fs.writeFileSync(logFile(), newer);
  await expect(open()).rejects.toThrow('version 2');

  fs.writeFileSync(logFile(), good.subarray(0, 10));
  await expect(open()).rejects.toBeInstanceOf(StepLogTruncatedError);

  // Whole again, but opened over another root: its records stage changes for this one.
  fs.writeFileSync(logFile(), good);
  const other = await StagedWorkspace.open({ root: fx.outside, stagingDir: filesDir() }).catch((e) => e);
  expect(other).toBeInstanceOf(StagingCorruptError);
  expect((other as Error).message).toContain(`not ${fx.outside}`);

  // Put back whole, nothing was lost.
  fs.writeFileSync(logFile(), good);
  expect(await committedLedger()).toBe('kind,ref\npayment,s0\npayment,s1\n');
});
