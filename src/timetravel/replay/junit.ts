/**
 * A replay suite as a JUnit XML report, the format CI systems (Jenkins, GitLab, GitHub annotations, CircleCI)
 * read: one `testcase` per tape, named after its file and classed by its agent; a divergence is a `failure`
 * naming step, kind and fields with expected vs actual in its body; a tape that could not be replayed is an
 * `error`; an unsealed tape whose steps all matched is `skipped` with the reason.
 */
import path from 'node:path';
import type { SuiteReport, TapeReplayResult } from './suite';

/** Text safe in XML 1.0 character data and attribute values: escaped, and without the characters XML forbids. */
export function xmlText(s: string): string {
  return (
    s
      // biome-ignore lint/suspicious/noControlCharactersInRegex: removing exactly the characters XML 1.0 forbids
      .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, '\uFFFD')
      .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&apos;')
  );
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

function divergenceText(r: TapeReplayResult): string {
  const d = r.divergence!;
  const lines = [
    `${r.file}`,
    `diverged at step ${d.step} (frame ${d.frame}, ${d.kind}) after ${r.replayed} matching steps`,
    `fields: ${d.fields.join(', ')}`,
    `expected (tape): ${JSON.stringify(d.expected)}`,
    `actual (code now): ${JSON.stringify(d.actual)}`,
  ];
  if (r.code) lines.push(`code: ${r.code.source} ${r.code.module}`);
  return lines.join('\n');
}

function testcase(r: TapeReplayResult, root: string): string {
  const name = path.relative(root, r.file) || path.basename(r.file);
  const attrs = `classname="${xmlText(`jbx.replay.${r.workflowType ?? 'unknown'}`)}" name="${xmlText(name)}" file="${xmlText(r.file)}" time="${seconds(r.durationMs)}"`;
  if (r.status === 'match') return `    <testcase ${attrs}/>`;
  if (r.status === 'incomplete')
    return `    <testcase ${attrs}>\n      <skipped message="${xmlText(`the tape is unsealed (the run did not finish); its ${r.replayed} recorded steps all matched`)}"/>\n    </testcase>`;
  if (r.status === 'diverged' && !r.divergence) {
    // A plain Temporal workflow's bundle whose code Temporal's replayer found not deterministic.
    const e = r.error ?? {
      code: 'TEMPORAL_NONDETERMINISM',
      message: 'not deterministic against its history',
    };
    return `    <testcase ${attrs}>\n      <failure type="${xmlText(e.code)}" message="${xmlText(e.message)}">${xmlText(`${r.file}\n${r.history?.error ?? e.message}`)}</failure>\n    </testcase>`;
  }
  if (r.status === 'diverged') {
    const d = r.divergence!;
    const message = `diverged at step ${d.step} (${d.kind}): ${d.fields.join(', ')}`;
    return `    <testcase ${attrs}>\n      <failure type="${xmlText(d.kind)}" message="${xmlText(message)}">${xmlText(divergenceText(r))}</failure>\n    </testcase>`;
  }
  const e = r.error ?? { code: 'REPLAY_FAILED', message: 'not replayed' };
  return `    <testcase ${attrs}>\n      <error type="${xmlText(e.code)}" message="${xmlText(e.message)}">${xmlText(`${r.file}\n${e.message}`)}</error>\n    </testcase>`;
}

/** The report as JUnit XML; test names are the tapes' paths relative to `root`. */
export function junitXml(report: SuiteReport, options: { name?: string; root?: string } = {}): string {
  const s = report.summary;
  const root = options.root ?? process.cwd();
  const name = xmlText(options.name ?? 'jbx replay');
  const counts = `tests="${s.tapes}" failures="${s.diverged}" errors="${s.errors}" skipped="${s.incomplete}" time="${seconds(s.durationMs)}"`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${name}" ${counts}>`,
    `  <testsuite name="${name}" ${counts} timestamp="${new Date().toISOString().replace(/\.\d+Z$/, '')}">`,
    ...report.results.map((r) => testcase(r, root)),
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
