import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processesMentioning } from '../support/processes';
import { buildIfStale, ROOT, type Run, run, startUntil, stop, userEnv } from './packedProject';
import { shippedDocs } from './shippedDocs';

const HELLO_ACTIVITIES = `export async function greet(name: string): Promise<string> {
  return \`Hello, \${name}!\`;
}
`;
const HELLO_WORKFLOWS = `import { proxyActivities } from '@temporalio/workflow';
import type * as activities from './activities';

const { greet } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

export async function example(name: string): Promise<string> {
  return await greet(name);
}
`;
// Temporal's hello-world worker and client in one file, with Jukebox's plugin added to the worker.
const HELLO_WORKER = `import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { JukeboxPlugin } from 'jukebox';
import * as activities from './activities';

async function run() {
  const address = process.env.JUKEBOX_TEMPORAL_ADDRESS!;
  const namespace = process.env.JUKEBOX_TEMPORAL_NAMESPACE!;
  const taskQueue = process.env.HELLO_TASK_QUEUE!;
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowsPath: require.resolve('./workflows'),
    activities,
    plugins: [new JukeboxPlugin({ tape: { dir: process.env.HELLO_TAPES! } })],
  });
  const client = new Client({ connection: await Connection.connect({ address }), namespace });
  const result = await worker.runUntil(
    client.workflow.execute('example', { taskQueue, workflowId: taskQueue, args: ['Temporal'] }),
  );
  console.log(result);
  await connection.close();
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;

const expectOk = (r: Run, what: string) => expect(r.code, `${what}\n${r.stdout}\n${r.stderr}`).toBe(0);

describe('the packed package in an empty project', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-pack-'));
  const app = path.join(work, 'app');
  const tapes = path.join(app, '.jukebox', 'tapes');
  const queue = `packed-${Date.now().toString(36)}`;
  const env = userEnv({ JUKEBOX_TASK_QUEUE: queue });
  const jbx = (args: string[], cwd = app) => run('npx', ['--no-install', 'jbx', ...args], cwd, env);
  const measured: Record<string, number> = {};
  let tarball: string;
  let worker: ChildProcess | undefined;
  let tape: string;

  beforeAll(async () => {
    await buildIfStale();
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT);
    expectOk(packed, 'npm pack');
    tarball = path.join(work, JSON.parse(packed.stdout)[0].filename);
    measured.tarballBytes = statSync(tarball).size;
    mkdirSync(app);
    // From the registry alone: the tarball's dependencies come from npm (its cache when warm), none from here.
    const installed = await run(
      'npm',
      ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'],
      app,
    );
    expectOk(installed, 'npm install of the tarball');
    measured.installMs = installed.ms;
    const init = await jbx(['init']);
    expectOk(init, 'jbx init');
    const scaffolded = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], app);
    expectOk(scaffolded, 'npm install of the scaffolded project');
    measured.scaffoldInstallMs = scaffolded.ms;
    const started = await startUntil(
      process.execPath,
      ['--import', 'tsx', 'src/worker.ts'],
      app,
      env,
      /worker ready on task queue (\S+)/,
    );
    worker = started.child;
    expect(started.output()).toContain('no OPENAI_API_KEY: the agent talks to the local model server');
    const client = await run(process.execPath, ['--import', 'tsx', 'src/client.ts', 'Paris'], app, env);
    expectOk(client, 'the scaffolded client');
    expect(client.stdout).toContain('answer: Paris is 14°C with light rain today');
    const names = readdirSync(tapes).filter((n) => n.endsWith('.jbx'));
    expect(names).toHaveLength(1);
    tape = path.join(tapes, names[0]!);
    process.stderr.write(`[package] ${JSON.stringify(measured)}\n`);
  }, 900_000);

  afterAll(async () => {
    await stop(worker);
    rmSync(work, { recursive: true, force: true });
  });

  it('ships dist and the docs: JavaScript, declarations, the viewer and Markdown, nothing test-only', async () => {
    const listed = await run('tar', ['tzf', tarball], work);
    const files = listed.stdout.trim().split('\n');
    expect(files).toContain('package/dist/cli/jbx.js');
    expect(files).toContain('package/dist/temporal/workflow/index.d.ts');
    expect(files).toContain('package/dist/cli/viewer/web/index.html');
    const docs = shippedDocs(ROOT).map((f) => `package/${f}`);
    expect(docs).toEqual(expect.arrayContaining(['package/docs/approvals.md', 'package/src/cli/README.md']));
    for (const doc of docs) expect(files).toContain(doc);
    const outside = files.filter(
      (f) => !/^package\/(dist\/|package\.json$|LICENSE$)/.test(f) && !docs.includes(f),
    );
    expect(outside).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const pkg = JSON.parse(readFileSync(path.join(app, 'node_modules/jukebox/package.json'), 'utf8'));
    expect(pkg.dependencies.tsx).toBeUndefined();
    expect(pkg.dependencies.typescript).toBeUndefined();
  });

  it('jbx ls, replay, fork --at 1 and view work from the project folder', async () => {
    const ls = await jbx(['ls', '--json']);
    expectOk(ls, 'jbx ls');
    expect(JSON.parse(ls.stdout)).toEqual([
      expect.objectContaining({ workflow: 'weatherAgent', outcome: 'completed', steps: 3 }),
    ]);
    const replay = await jbx(['replay', tape, '--json']);
    expectOk(replay, 'jbx replay');
    expect(JSON.parse(replay.stdout)).toMatchObject({ status: 'match', divergence: null });
    const fork = await jbx(['fork', tape, '--at', '1', '--json']);
    expectOk(fork, 'jbx fork');
    expect(JSON.parse(fork.stdout)).toMatchObject({ status: 'completed', fork: { forkStep: 1 } });
    const view = await startUntil(
      'npx',
      ['--no-install', 'jbx', 'view', '--port', '0'],
      app,
      env,
      /(http:\/\/127\.0\.0\.1:\d+\/)/,
    );
    try {
      const res = await fetch(view.match[1]!);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('<html');
    } finally {
      await stop(view.child);
    }
    // The server npx started ends with it (npx alone exiting left it running).
    expect(processesMentioning(path.join(app, 'node_modules/.bin/jbx view'))).toEqual([]);
  });

  it('jbx bundle makes a report that replays in another empty folder', async () => {
    const report = path.join(work, 'report.jbxb');
    expectOk(await jbx(['bundle', tape, '-o', report]), 'jbx bundle');
    const elsewhere = path.join(work, 'elsewhere');
    mkdirSync(elsewhere);
    const bin = path.join(app, 'node_modules/jukebox/dist/cli/jbx.js');
    const replay = await run(process.execPath, [bin, 'replay', report, '--json'], elsewhere, env);
    expectOk(replay, 'jbx replay of the bundle');
    expect(JSON.parse(replay.stdout)).toMatchObject({ status: 'match' });
  });

  it("the scaffolded project's own test replays its tape offline and passes", async () => {
    const test = await run('npm', ['test'], app, env);
    expectOk(test, 'npm test of the scaffolded project');
    expect(test.stdout).toMatch(/1 passed/);
  });

  it("JukeboxPlugin on Temporal's hello-world worker records its workflow's tape", async () => {
    const hello = path.join(app, 'hello');
    const helloTapes = path.join(work, 'hello-tapes');
    mkdirSync(hello);
    writeFileSync(path.join(hello, 'activities.ts'), HELLO_ACTIVITIES);
    writeFileSync(path.join(hello, 'workflows.ts'), HELLO_WORKFLOWS);
    writeFileSync(path.join(hello, 'worker.ts'), HELLO_WORKER);
    const r = await run(process.execPath, ['--import', 'tsx', 'hello/worker.ts'], app, {
      ...env,
      HELLO_TASK_QUEUE: `hello-${queue}`,
      HELLO_TAPES: helloTapes,
    });
    expectOk(r, 'the hello-world worker');
    expect(r.stdout.trim()).toBe('Hello, Temporal!');
    const ls = await jbx(['ls', '--dir', helloTapes, '--json']);
    expectOk(ls, 'jbx ls of the hello-world tapes');
    expect(JSON.parse(ls.stdout)).toEqual([
      expect.objectContaining({
        workflow: 'example',
        workflowId: `hello-${queue}`,
        outcome: 'completed',
        steps: 1,
      }),
    ]);
    const file = path.join(helloTapes, readdirSync(helloTapes).find((n) => n.endsWith('.jbx'))!);
    const show = await jbx(['show', file, '--json']);
    expectOk(show, 'jbx show');
    expect(show.stdout).toContain('Hello, Temporal!');
    expectOk(await jbx(['verify', file]), 'jbx verify');
  });
});
