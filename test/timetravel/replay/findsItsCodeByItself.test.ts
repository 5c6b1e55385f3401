import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountingOutput } from '../../../examples/accounting/agent';
import { ACCOUNTING_SCRIPT, accountingBooth, prepareAccountingDemo } from '../../../examples/accounting/demo';
import { accountingTools } from '../../../examples/accounting/tools';
import { BoothRuntime } from '../../../src/booth/shadowBooth';
import { localEndpoints } from '../../../src/llm';
import { captureRunHistory, startAgent } from '../../../src/temporal';
import { type ModelServer, startModelServer } from '../../../src/testing/modelserver';
import { findWorkflowCode, writeBundle } from '../../../src/timetravel/bundle';
import { readTimeline, storedCodeDirs } from '../../../src/timetravel/replay';
import { connectTestWorker } from '../../support/temporal';
import { REFUND_120, REFUND_750 } from './accountingRuns';
import { runJbx } from './jbx';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * The quickstart's accounting agent with its source in a temporary project of its own (imports pointed at this
 * repository), so the test can delete it: what a user has after `npm run quickstart` and then a `git checkout`
 * that moved the agent on.
 */
function writeAgentProject(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const agent = readFileSync(path.join(ROOT, 'examples/accounting/agent.ts'), 'utf8').replace(
    /'\.\.\/\.\.\/src\//g,
    `'${ROOT}/src/`,
  );
  writeFileSync(path.join(dir, 'agent.ts'), agent);
  writeFileSync(
    path.join(dir, 'workflows.ts'),
    `import { agentWorkflow } from ${JSON.stringify(path.join(ROOT, 'src/temporal/workflow/agentWorkflow'))};\n` +
      `import { accountingAgent as definition } from './agent';\n` +
      'export const accountingAgent = agentWorkflow(definition);\n',
  );
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return path.join(dir, 'workflows.ts');
}

describe("the quickstart's tapes replay with the code that recorded them, found by itself", () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'jbx-own-code-'));
  const source = path.join(work, 'agent-src');
  const tapeDir = path.join(work, 'tapes');
  const empty = path.join(work, 'empty');
  let model: ModelServer;
  const tapes: string[] = [];

  beforeAll(async () => {
    const workflowsPath = writeAgentProject(source);
    model = await startModelServer({ script: ACCOUNTING_SCRIPT });
    const demo = await prepareAccountingDemo(path.join(work, 'demo'));
    const booth = new BoothRuntime(accountingBooth(demo));
    const env = await connectTestWorker({
      endpoints: localEndpoints(model.url),
      tools: accountingTools,
      booth,
      workflowsPath,
      tape: { dir: tapeDir },
    });
    try {
      for (const request of [REFUND_120, REFUND_750]) {
        const handle = await startAgent<{ request: string }, AccountingOutput>(
          'accountingAgent',
          { request },
          { connection: env.connection, namespace: env.namespace, taskQueue: env.taskQueue },
        );
        await handle.result();
        tapes.push((await captureRunHistory(handle, tapeDir)).tapeFile);
      }
    } finally {
      await env.close();
      await booth.close();
      await model.close();
    }
    // The agent's source is gone; so is the network (unshare -n below), and the commands run from an empty folder.
    rmSync(source, { recursive: true, force: true });
    mkdirSync(empty);
  }, 240_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('jbx replay TAPE in place: the stored code by hash, both booth runs match, no network', async () => {
    const r = await runJbx(['replay', tapes[1]!, '--json'], { offline: true, cwd: empty });
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout);
    const hash = readTimeline(tapes[1]!).tape.header.agentCodeHash;
    expect(json).toMatchObject({
      status: 'match',
      steps: 8,
      replayed: 8,
      codeSource: 'stored',
      agentModule: path.join(tapeDir, 'code', `${hash.slice('blake3:'.length)}.js`),
      recordedOutcome: 'completed',
    });
    expect(json.output).toMatchObject({
      committed: false,
      verdicts: [{ gate: 'refund-threshold', ok: false }],
    });

    // The whole folder as a suite: one line per tape, both with the stored code.
    const suite = await runJbx(['replay', tapeDir], { offline: true, cwd: empty });
    expect(suite.code, suite.stderr).toBe(0);
    const lines = suite.stdout.trim().split('\n');
    expect(
      lines
        .filter((l) => l.startsWith('match '))
        .map((l) => l.includes('8/8 steps') && l.endsWith('(stored code)')),
    ).toEqual([true, true]);
    expect(lines.at(-1)).toMatch(/^2 tapes: 2 match, 0 diverged, 0 could not be replayed, 0 unsealed /);

    // Temporal's replayer takes the same stored code, with the history stored beside the tape: still no network.
    const temporal = await runJbx(['replay', '--temporal', tapes[0]!, '--json'], {
      offline: true,
      cwd: empty,
    });
    expect(temporal.code, temporal.stderr).toBe(0);
    expect(JSON.parse(temporal.stdout)).toMatchObject({ deterministic: true, codeSource: 'stored' });
  });

  it('from bundles in an empty folder under unshare -n, with the agent source deleted', async () => {
    const code = findWorkflowCode(
      storedCodeDirs(tapes[0]!),
      readTimeline(tapes[0]!).tape.header.agentCodeHash,
    )!;
    for (const tape of tapes) {
      const car = JSON.parse(readFileSync(`${tape}.history.json`, 'utf8')) as { history: string };
      await writeBundle(
        {
          tapeFile: tape,
          history: { bytes: readFileSync(path.join(tapeDir, car.history)) },
          workflowCode: code.code,
        },
        path.join(empty, `${path.basename(tape, '.jbx')}.jbxb`),
      );
    }
    const r = await runJbx(['replay', '.', '--json'], { offline: true, cwd: empty });
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(r.stdout) as {
      results: { status: string; steps: number; code: { source: string } }[];
    };
    expect(json.results.map((x) => [x.status, x.steps, x.code.source])).toEqual([
      ['match', 8, 'bundle'],
      ['match', 8, 'bundle'],
    ]);
  });

  it('without stored code, a project that lacks the agent gets a message naming both places and what to pass', async () => {
    const lone = path.join(work, 'lone');
    mkdirSync(lone);
    const tape = path.join(lone, path.basename(tapes[0]!));
    copyFileSync(tapes[0]!, tape);
    const project = path.join(work, 'other-project');
    mkdirSync(project);
    writeFileSync(
      path.join(project, 'jukebox.config.json'),
      JSON.stringify({ agents: [path.join(ROOT, 'examples/sample/agent.ts')] }),
    );
    const r = await runJbx(['replay', tape], {
      offline: true,
      cwd: project,
      env: { JUKEBOX_TAPE_DIR: lone },
    });
    expect(r.code).toBe(1);
    const hash = readTimeline(tape).tape.header.agentCodeHash;
    expect(r.stderr).toContain(
      `no code to replay ${tape} with: the workflow code that recorded it (${hash}) is not stored in ${path.join(lone, 'code')}, ` +
        `and the project here (${path.join(project, 'jukebox.config.json')}) exports no agent named "accountingAgent" ` +
        `(modules: ${path.join(ROOT, 'examples/sample/agent.ts')}; agents found: researchAgent). ` +
        'Pass --against DIR: a project folder whose jukebox.config.json lists the module exporting "accountingAgent" in "agents"',
    );
  });
});
