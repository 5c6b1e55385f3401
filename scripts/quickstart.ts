/**
 * The main job on embedded defaults: the Temporal dev server (installed and started when none answers), the
 * local model server (unless a real API key is set), an in-process worker with a Shadow Booth over a fresh copy
 * of the accounting demo, and three runs of the accounting agent: a $120 refund that commits, a $750 refund
 * the policy gate refuses, proven untouched by hashes of the workspace, database and outbox, and a $750 refund
 * whose gate asks a person instead, approved through `jbx approve` by a reviewer, which then commits.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { AccountingInput, AccountingOutput } from '../examples/accounting/agent';
import {
  ACCOUNTING_SCRIPT,
  type AccountingDemo,
  accountingBooth,
  type DemoFingerprint,
  fingerprint,
  prepareAccountingDemo,
  readBalance,
} from '../examples/accounting/demo';
import { readOutbox } from '../examples/accounting/notifyServer';
import { accountingTools } from '../examples/accounting/tools';
import { ensureTemporalCli, startDevServer, temporalConfigFromEnv } from '../servers/devserver';
import type { StagedSummary } from '../src/agent/commit';
import { printStep } from '../src/agent/printStep';
import { BoothRuntime } from '../src/booth/shadowBooth';
import { endpointsFromEnv, localEndpoints } from '../src/llm';
import {
  createJukeboxWorker,
  type PendingApproval,
  startAgent,
  waitForApproval,
  waitWithProgress,
} from '../src/temporal';
import { installQuietRuntime } from '../src/temporal/worker/quietRuntime';
import { startModelServer } from '../src/testing/modelserver';

const REQUESTS = [
  'Refund $120 to customer C-1001: duplicate charge.',
  'Refund $750 to customer C-2002: service outage credit.',
];
/** The third run: the same $750 refund, its gate asking a person (who must be the reviewer) instead of refusing. */
const APPROVAL_REQUEST = 'Refund $750 to customer C-2002: service outage credit, for a person to approve.';
const REVIEWER = 'reviewer';
const JBX = path.resolve(__dirname, '../src/cli/bin.js');

function printStaged(title: string, staged: StagedSummary | null) {
  console.log(`  ${title}:`);
  if (!staged) return console.log('    (nothing could be listed)');
  for (const f of staged.files) console.log(`    file  ${f}`);
  for (const s of staged.sql) console.log(`    sql   ${s}`);
  for (const m of staged.mcp) console.log(`    mcp   ${m}`);
}

function printHashes(before: DemoFingerprint, after: DemoFingerprint) {
  for (const key of ['workspace', 'database', 'outbox'] as const)
    console.log(
      `    ${key.padEnd(9)} ${before[key].slice(0, 16)} -> ${after[key].slice(0, 16)}  ${before[key] === after[key] ? 'unchanged' : 'changed'}`,
    );
}

function printWaiting(p: PendingApproval) {
  console.log(`  WAITING FOR A PERSON: approval ${p.id} at step ${p.step}`);
  console.log(`    reason: ${p.reason}`);
  console.log(
    `    decided by: ${p.deciders?.join(', ') ?? 'anyone'}; deadline ${new Date(p.deadlineMs).toISOString()} (then ${p.onTimeout})`,
  );
  printStaged('staged, held intact while it waits (no worker slot, no activity running)', p.staged ?? null);
}

async function printState(demo: AccountingDemo) {
  const balances = `C-1001 ${await readBalance(demo, 'C-1001')}, C-2002 ${await readBalance(demo, 'C-2002')}`;
  console.log(
    `  real state now: balances (cents) ${balances}; outbox holds ${readOutbox(demo.outbox).length} notification(s)`,
  );
}

async function main() {
  installQuietRuntime();
  const config = temporalConfigFromEnv();
  await startDevServer({ cliPath: await ensureTemporalCli(), detached: true });
  const realApi = Boolean(process.env.OPENAI_API_KEY);
  const model = realApi ? undefined : await startModelServer({ script: ACCOUNTING_SCRIPT });
  console.log(
    `model endpoint: ${model ? `local model server ${model.url}` : 'the real OpenAI API (OPENAI_API_KEY is set)'}`,
  );
  const demo = await prepareAccountingDemo(
    path.resolve(process.env.JUKEBOX_QUICKSTART_DIR ?? '.jukebox/quickstart/accounting'),
  );
  console.log(
    `demo data (fresh copy): ${path.relative(process.cwd(), demo.dir)}/ (workspace/ledger.csv, accounts.sqlite, outbox.json)`,
  );
  const booth = new BoothRuntime(accountingBooth(demo));

  const nativeConnection = await NativeConnection.connect({ address: config.address });
  const connection = await Connection.connect({ address: config.address });
  const taskQueue = `quickstart-${process.pid}`;
  try {
    const worker = await createJukeboxWorker({
      connection: nativeConnection,
      namespace: config.namespace,
      taskQueue,
      endpoints: model ? localEndpoints(model.url) : endpointsFromEnv(),
      tools: accountingTools,
      booth,
      workflowsPath: path.join(__dirname, '../examples/accounting/workflows.ts'),
    });
    await worker.runUntil(async () => {
      for (const request of REQUESTS) {
        const before = await fingerprint(demo);
        const handle = await startAgent<{ request: string }, AccountingOutput>(
          'accountingAgent',
          { request },
          { connection, namespace: config.namespace, taskQueue },
        );
        console.log(`\naccountingAgent run ${handle.workflowId}`);
        console.log(`request: ${request}`);
        const { output } = await waitWithProgress(handle, printStep);
        console.log(`  agent: ${output.answer}`);
        if (output.committed) {
          printStaged('staged', output.report.staged);
          for (const v of output.report.verdicts) console.log(`  gate ${v.gate}: PASSED — ${v.reason}`);
          console.log(
            `  COMMITTED: ${output.report.files.steps} file step(s), ${output.report.sql?.rowsAffected ?? 0} SQL row(s), ${output.report.mcp.applied} MCP call(s)`,
          );
        } else {
          printStaged('staged', output.discarded);
          for (const v of output.verdicts)
            console.log(`  gate ${v.gate}: ${v.ok ? 'PASSED' : 'REFUSED'} — ${v.reason}`);
          console.log('  ROLLED BACK: everything staged was discarded; nothing reached the real targets');
        }
        const after = await fingerprint(demo);
        console.log('  sha256 before -> after:');
        printHashes(before, after);
        await printState(demo);
      }
      await approvedRun(demo, {
        connection,
        namespace: config.namespace,
        taskQueue,
        address: config.address,
      });
      console.log(
        `\nsee the runs in the Temporal Web UI: http://127.0.0.1:${config.uiPort}/namespaces/${config.namespace}/workflows`,
      );
      console.log('tapes: npx jbx ls; the dev server keeps running; stop it with: npm run temporal:stop');
    });
  } finally {
    await connection.close();
    await nativeConnection.close();
    await booth.close();
    await model?.close();
  }
}

/**
 * The third run: the gate asks; the quickstart waits until the run is waiting, shows what it waits for, then
 * approves it the way a reviewer would, with `jbx approve` in its own process, and follows the run to its commit.
 */
async function approvedRun(
  demo: AccountingDemo,
  t: { connection: Connection; namespace: string; taskQueue: string; address: string },
) {
  const before = await fingerprint(demo);
  const handle = await startAgent<AccountingInput, AccountingOutput>(
    'accountingAgent',
    { request: APPROVAL_REQUEST, approval: { deciders: [REVIEWER] } },
    { connection: t.connection, namespace: t.namespace, taskQueue: t.taskQueue },
  );
  console.log(`\naccountingAgent run ${handle.workflowId}`);
  console.log(`request: ${APPROVAL_REQUEST}`);
  const finished = waitWithProgress(handle, printStep);
  printWaiting(await waitForApproval(handle));
  const note = 'outage confirmed with support';
  console.log(`  $ npx jbx approve ${handle.workflowId} --by ${REVIEWER} --note '${note}'`);
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [JBX, 'approve', handle.workflowId, '--by', REVIEWER, '--note', note],
    {
      env: { ...process.env, JUKEBOX_TEMPORAL_ADDRESS: t.address, JUKEBOX_TEMPORAL_NAMESPACE: t.namespace },
    },
  );
  for (const line of stdout.trimEnd().split('\n')) console.log(`    ${line}`);
  const { output } = await finished;
  console.log(`  agent: ${output.answer}`);
  if (!output.committed) throw new Error(`the approved refund did not commit: ${output.reason}`);
  const a = output.report.approval;
  if (a && a.outcome !== 'timedOut')
    console.log(`  APPROVED by ${a.by} at ${new Date(a.atMs).toISOString()}: ${a.note ?? ''}`);
  for (const v of output.report.verdicts)
    console.log(`  gate ${v.gate}: ${v.approvedBy ? `APPROVED by ${v.approvedBy}` : 'PASSED'} — ${v.reason}`);
  console.log(
    `  COMMITTED: ${output.report.files.steps} file step(s), ${output.report.sql?.rowsAffected ?? 0} SQL row(s), ${output.report.mcp.applied} MCP call(s)`,
  );
  console.log('  sha256 before -> after:');
  printHashes(before, await fingerprint(demo));
  await printState(demo);
}

main().catch((err) => {
  console.error(`quickstart failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
