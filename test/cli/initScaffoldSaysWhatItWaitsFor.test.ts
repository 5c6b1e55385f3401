/**
 * The `jbx init` project as a new user runs it, from this repository's sources (test/support/scaffoldFromSource.ts):
 * `npm start` with no worker up says, after five seconds, that no worker is polling its task queue and keeps
 * waiting; the worker started then runs the agent and the client prints its answer; one Ctrl-C stops the worker
 * (its local model server closes with it). A worker whose breaker model is not installed says so once, not once
 * per step of every run. Without a Temporal server, or with a namespace it lacks, the client
 * and the worker fail with a typed error naming the address, the namespace and what to run, not a gRPC stack.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { temporalConfigFromEnv } from '../../servers/devserver/config';
import { scaffoldFromSource } from '../support/scaffoldFromSource';

const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-scaffold-run-'));
const app = path.join(work, 'app');
scaffoldFromSource(app);
const temporal = temporalConfigFromEnv();
const queue = `scaffold-${Date.now().toString(36)}`;
const children: ChildProcess[] = [];
const started: string[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // A run left waiting (a failed assertion before its worker came) is terminated, not left on the server.
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: temporal.namespace });
  for (const id of started)
    await client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => {});
  await connection.close();
  rmSync(work, { recursive: true, force: true });
});

interface Proc {
  child: ChildProcess;
  output(): string;
  /** Resolves with the output once it matches `re`; rejects if the process exits first or after `ms`. */
  until(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(entry: string, env: Record<string, string>, args: string[] = []): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    cwd: app,
    env: {
      ...process.env,
      OPENAI_API_KEY: '',
      JUKEBOX_TAPE_DIR: path.join(work, 'tapes'),
      JUKEBOX_TASK_QUEUE: queue,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => out,
    exited,
    until(re, ms = 90_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(re);
          if (!m) return;
          cleanup();
          resolve(m);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`${entry}: no ${re} after ${ms} ms:\n${out}`));
        }, ms);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        exited.then(({ code }) => {
          if (!out.match(re)) {
            cleanup();
            reject(new Error(`${entry} exited (${code}) before ${re}:\n${out}`));
          }
        });
        check();
      });
    },
  };
}

describe('the jbx init project', () => {
  it('npm start with no worker says no worker is polling its task queue, keeps waiting, and finishes once one starts; a missing embedding model is logged once over two runs; one Ctrl-C stops the worker', {
    timeout: 240_000,
  }, async () => {
    const client = start('src/client.ts', {}, ['Paris']);
    const id = (await client.until(/started (\S+)/))[1]!;
    started.push(id);
    const t0 = performance.now();
    const notice = await client.until(
      /no worker is polling task queue (\S+) \(namespace (\S+) at (\S+)\)/,
      30_000,
    );
    const waited = performance.now() - t0;
    expect(notice.slice(1)).toEqual([queue, temporal.namespace, temporal.address]);
    // After a few seconds, not at once, and it names what to do.
    expect(waited).toBeGreaterThan(3_000);
    expect(client.output()).toContain('npm run worker');
    expect(client.child.exitCode).toBeNull();

    const noModel = path.join(work, 'no-model');
    const worker = start('src/worker.ts', { JUKEBOX_EMBEDDING_MODEL_DIR: noModel });
    await worker.until(/worker ready on task queue (\S+)/);
    expect(worker.output()).toContain(`worker ready on task queue ${queue}`);
    expect(await client.exited).toEqual({ code: 0, signal: null });
    expect(client.output()).toContain('answer: Paris is 14°C with light rain today');
    const second = start('src/client.ts', {}, ['Paris']);
    started.push((await second.until(/started (\S+)/))[1]!);
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(second.output()).toContain('answer: Paris is 14°C with light rain today');
    expect(second.output()).not.toContain('no worker is polling');
    // Two runs of three steps each, one line about the model: the worker's, with advice that works from here.
    const modelLines = worker
      .output()
      .split('\n')
      .filter((l) => l.includes('sentence-embedding model'));
    expect(modelLines, worker.output()).toHaveLength(1);
    expect(modelLines[0]).toContain(
      `[WARN] The breaker's sentence-embedding model in ${noModel} cannot be loaded`,
    );
    expect(worker.output()).not.toContain('circuit breaker detector degraded');

    // The worker ran a run (its model server served keep-alive connections); one SIGINT ends the process.
    const t1 = performance.now();
    worker.child.kill('SIGINT');
    const stop = await Promise.race([
      worker.exited,
      new Promise((r) => setTimeout(() => r('still running 20 s after one Ctrl-C'), 20_000)),
    ]);
    expect(stop, worker.output()).toEqual({ code: 0, signal: null });
    process.stderr.write(
      `[scaffold] notice after ${Math.round(waited)} ms; worker exit ${Math.round(performance.now() - t1)} ms after SIGINT\n`,
    );
  });

  it('without a Temporal server, npm start and npm run worker fail with TEMPORAL_UNREACHABLE naming the address, the namespace and what to run', async () => {
    for (const entry of ['src/client.ts', 'src/worker.ts']) {
      const p = start(entry, {
        JUKEBOX_TEMPORAL_ADDRESS: '127.0.0.1:1',
        JUKEBOX_TEMPORAL_NAMESPACE: 'weather',
      });
      expect(await p.exited).toEqual({ code: 1, signal: null });
      const out = p.output().trim();
      expect(out).toMatch(
        /^TEMPORAL_UNREACHABLE: the Temporal server at 127\.0\.0\.1:1 \(namespace weather\) did not answer \(.+\); start one \(temporal server start-dev --namespace weather; /,
      );
      // One line of advice, no stack.
      expect(out.split('\n')).toHaveLength(1);
      expect(out).not.toMatch(/\n\s+at /);
    }
  });

  it('with a namespace the server lacks, both fail with TEMPORAL_NAMESPACE_NOT_FOUND saying how to create it', async () => {
    const ns = `missing-${Date.now().toString(36)}`;
    for (const entry of ['src/client.ts', 'src/worker.ts']) {
      const p = start(entry, { JUKEBOX_TEMPORAL_NAMESPACE: ns });
      expect(await p.exited).toEqual({ code: 1, signal: null });
      expect(p.output().trim()).toBe(
        `TEMPORAL_NAMESPACE_NOT_FOUND: the Temporal server at ${temporal.address} has no namespace ${ns}; create it ` +
          `(temporal operator namespace create --namespace ${ns} --address ${temporal.address}, or start the dev ` +
          `server with --namespace ${ns}) or set JUKEBOX_TEMPORAL_NAMESPACE to one it has`,
      );
    }
  });
});
