/**
 * Replays one tape many times in a process of its own and prints the mean time per replay as JSON: the
 * in-process replay figure of the replay suite, measured where only replay runs (a test runner or an eval
 * loop), away from the bench process's Temporal worker, model servers and HTTP peers and their heaps.
 * Usage: tsx bench/replayLoop.ts TAPE [RUNS]
 */
import { accountingAgent } from '../examples/accounting/agent';
import { researchAgent } from '../examples/sample/agent';
import { readTimeline, replayTape } from '../src/timetravel/replay';

/** The example agents by workflow type: the research agent's tapes and the accounting quickstart's. */
const AGENTS: Record<string, unknown> = { researchAgent, accountingAgent };

async function main() {
  const [file, runsArg] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx bench/replayLoop.ts TAPE [RUNS]');
  const runs = Number(runsArg ?? 3000);
  const timeline = readTimeline(file);
  const agent = AGENTS[timeline.tape.header.workflowType] as never;
  if (!agent) throw new Error(`no example agent named ${timeline.tape.header.workflowType}`);
  for (let i = 0; i < Math.ceil(runs / 10); i++) await replayTape(file, { agent, timeline });
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) {
    const r = await replayTape(file, { agent, timeline });
    if (r.status !== 'match') throw new Error(`replay diverged: ${JSON.stringify(r.divergence)}`);
  }
  const perReplayMs = (performance.now() - t0) / runs;
  process.stdout.write(
    `${JSON.stringify({ perReplayMs, steps: timeline.steps.length + timeline.booth.length })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
