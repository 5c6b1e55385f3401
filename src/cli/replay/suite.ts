/**
 * `jbx replay DIR|GLOB [...]`: every tape a folder or glob names, replayed offline in parallel (worker threads,
 * up to the cores), one line per tape as it finishes and a summary; exit 1 when any diverged or could not be
 * replayed; `--junit FILE` writes the JUnit XML report CI systems show per tape.
 */
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { junitXml } from '../../timetravel/replay/junit';
import { replayTapes, type TapeReplayResult } from '../../timetravel/replay/suite';
import { listTapes } from '../../timetravel/replay/tapeFiles';
import { ExitCode, ExitError, usageError } from '../exitError';
import type { Output } from '../output';
import { replayPlainWorkflowBundle } from './plainWorkflowBundle';

function line(r: TapeReplayResult, root: string): string {
  const name = path.relative(root, r.file) || r.file;
  const ms = `${r.durationMs.toFixed(r.durationMs < 10 ? 1 : 0)} ms`;
  switch (r.status) {
    case 'match': {
      if (r.history)
        return `match       ${name}  ${r.workflowType}: deterministic against its history (${r.history.events} events), ${ms} (a plain Temporal workflow: Temporal's replayer, bundle code)`;
      const gates =
        (r.stagingChecked ? `, ${r.stagingChecked} commit(s) staged again by the project's tools` : '') +
        (r.gatesChecked ? `, ${r.gatesChecked} commit(s) judged again by the project's gates` : '');
      return `match       ${name}  ${r.workflowType}: ${r.replayed}/${r.steps} steps${gates}, ${ms} (${r.code?.source} code)`;
    }
    case 'incomplete':
      return `incomplete  ${name}  ${r.workflowType}: unsealed tape, its ${r.replayed} recorded steps match, ${ms}`;
    case 'diverged': {
      const d = r.divergence;
      if (!d) return `DIVERGED    ${name}  ${r.workflowType}: ${r.error?.message} (${r.code?.source} code)`;
      return `DIVERGED    ${name}  ${r.workflowType}: step ${d.step} (frame ${d.frame}, ${d.kind}): ${d.fields.join(', ')} (${r.code?.source} code)`;
    }
    default:
      return `ERROR       ${name}  ${r.error?.code}: ${r.error?.message}`;
  }
}

function writeReport(file: string, xml: string): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, xml);
  renameSync(tmp, file);
}

export async function replaySuite(
  patterns: string[],
  flags: Record<string, string | boolean | undefined>,
  against: string | undefined,
  out: Output,
  usage: string,
): Promise<void> {
  if (flags.temporal)
    throw usageError(`--temporal replays one tape; give it a TAPE, not a folder or glob\nusage: ${usage}`);
  if (patterns.length === 0) throw usageError(`missing DIR or GLOB\nusage: ${usage}`);
  let jobs: number | undefined;
  if (flags.jobs !== undefined) {
    jobs = Number(flags.jobs);
    if (!Number.isInteger(jobs) || jobs < 1)
      throw usageError(
        `--jobs takes a whole number of worker threads (1 or more), got ${JSON.stringify(flags.jobs)}`,
      );
  }
  if (against !== undefined && !existsSync(against))
    throw usageError(`--against ${against}: no such project folder`);
  const files = patterns.flatMap((p) => listTapes(p));
  if (files.length === 0)
    throw usageError(
      `no tapes (.jbx, .jbxb) in ${patterns.join(', ')}; give a folder of tapes or a glob like 'tapes/**/*.jbx'`,
    );
  const root = process.cwd();
  // Each tape's line as it finishes; with --json stdout is the report alone, so the lines go to stderr.
  const print = (s: string) => (out.json ? process.stderr : process.stdout).write(`${s}\n`);
  const report = await replayTapes(patterns, {
    ...(against !== undefined ? { against } : {}),
    ...(jobs !== undefined ? { jobs } : {}),
    onResult: (r) => print(line(r, root)),
    plainWorkflowBundle: replayPlainWorkflowBundle,
  });
  const s = report.summary;
  if (typeof flags.junit === 'string') writeReport(flags.junit, junitXml(report, { root }));
  const summary =
    `${s.tapes} tapes: ${s.match} match, ${s.diverged} diverged, ${s.errors} could not be replayed, ${s.incomplete} unsealed ` +
    `(${s.workers ? `${s.workers} worker threads` : 'in process'}, ${(s.durationMs / 1000).toFixed(1)} s)` +
    (typeof flags.junit === 'string' ? `; JUnit report ${flags.junit}` : '');
  out.result(summary, report);
  if (!report.ok)
    throw new ExitError(
      ExitCode.failed,
      `${s.diverged + s.errors} of ${s.tapes} tapes ${s.errors ? 'diverged or could not be replayed' : 'diverged'}`,
    );
}
