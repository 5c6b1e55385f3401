/**
 * The quickstart itself, as a user runs it: its three runs print each step, in order: the $120 refund commits,
 * the $750 refund is refused with the world unchanged, and the $750 refund whose gate asks a person waits, is
 * approved by `jbx approve` as the reviewer, and commits. Then its tapes replay offline as a user would replay
 * them: in place with nothing configured, and packed by `jbx bundle` into a folder of their own.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runJbx } from '../timetravel/replay/jbx';

const ROOT = path.resolve(__dirname, '../..');

function runQuickstart(env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/quickstart.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** Each of `parts` found after the previous one. */
function inOrder(text: string, parts: Array<string | RegExp>): string[] {
  const missing: string[] = [];
  let at = 0;
  for (const p of parts) {
    const m =
      typeof p === 'string' ? { index: text.indexOf(p, at), length: p.length } : p.exec(text.slice(at));
    const index =
      typeof p === 'string' ? (m as { index: number }).index : m ? at + (m as RegExpExecArray).index : -1;
    if (index < 0) missing.push(String(p));
    else at = index + (typeof p === 'string' ? p.length : (m as RegExpExecArray)[0].length);
  }
  return missing;
}

describe('the quickstart', () => {
  it('prints its three runs step by step: commit, refusal, and a refund a reviewer approves with jbx approve; its tapes replay offline in place and bundled', {
    timeout: 300_000,
  }, async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-quickstart-'));
    const tapes = path.join(base, 'tapes');
    const { code, out } = await runQuickstart({
      JUKEBOX_QUICKSTART_DIR: path.join(base, 'accounting'),
      JUKEBOX_TAPE_DIR: tapes,
    });
    expect(code, out).toBe(0);
    expect(
      inOrder(out, [
        'request: Refund $120 to customer C-1001: duplicate charge.',
        '  step  0  llm  gpt-4o-mini: calls get_account',
        'gate refund-threshold: PASSED',
        'COMMITTED: 1 file step(s), 1 SQL row(s), 1 MCP call(s)',
        'request: Refund $750 to customer C-2002: service outage credit.',
        'gate refund-threshold: REFUSED — refund of $750.00 to C-2002 exceeds the $500.00 autonomous threshold',
        'ROLLED BACK: everything staged was discarded; nothing reached the real targets',
        /workspace [0-9a-f]{16} -> [0-9a-f]{16} {2}unchanged/,
        /database {2}[0-9a-f]{16} -> [0-9a-f]{16} {2}unchanged/,
        /outbox {4}[0-9a-f]{16} -> [0-9a-f]{16} {2}unchanged/,
        'request: Refund $750 to customer C-2002: service outage credit, for a person to approve.',
        'WAITING FOR A PERSON: approval s7-1 at step 7',
        'decided by: reviewer',
        'sql   UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ? [75000,"C-2002"]',
        /\$ npx jbx approve accountingAgent-\S+ --by reviewer --note 'outage confirmed with support'/,
        /approved approval s7-1 of accountingAgent-\S+ \(run \S+\) as reviewer: the run took it/,
        'APPROVED by reviewer at',
        'gate refund-approval: APPROVED by reviewer',
        'COMMITTED: 1 file step(s), 1 SQL row(s), 1 MCP call(s)',
        /outbox {4}[0-9a-f]{16} -> [0-9a-f]{16} {2}changed/,
        'real state now: balances (cents) C-1001 12000, C-2002 -45000; outbox holds 2 notification(s)',
      ]),
      out,
    ).toEqual([]);

    // In place, from an empty folder with no network: the workflow code the worker stored by hash beside them.
    const empty = path.join(base, 'empty');
    fs.mkdirSync(empty);
    const files = fs
      .readdirSync(tapes)
      .filter((f) => f.endsWith('.jbx'))
      .sort();
    expect(files).toHaveLength(3);
    const inPlace = await runJbx(['replay', tapes], { offline: true, cwd: empty });
    expect(inPlace.code, inPlace.stderr).toBe(0);
    const lines = inPlace.stdout.trim().split('\n');
    expect(lines.slice(0, -1).sort()).toEqual(
      files.map((f) =>
        expect.stringMatching(
          new RegExp(
            `^match +\\S*${f.replace(/[.]/g, '\\.')} +accountingAgent: 8/8 steps, .*\\(stored code\\)$`,
          ),
        ),
      ),
    );
    expect(lines.at(-1)).toMatch(/^3 tapes: 3 match, 0 diverged, 0 could not be replayed, 0 unsealed /);

    // Packed by `jbx bundle` (which fetches each run's history from the server), then replayed in a folder that
    // holds nothing else, with no network.
    const bundles = path.join(base, 'bundles');
    fs.mkdirSync(bundles);
    for (const f of files) {
      const b = await runJbx(['bundle', path.join(tapes, f), '-o', path.join(bundles, `${f}b`)], {
        env: { JUKEBOX_TAPE_DIR: tapes },
      });
      expect(b.code, b.stderr).toBe(0);
    }
    const packed = await runJbx(['replay', '.', '--json'], { offline: true, cwd: bundles });
    expect(packed.code, packed.stderr).toBe(0);
    const report = JSON.parse(packed.stdout) as {
      results: { file: string; status: string; steps: number; code: { source: string } }[];
    };
    expect(report.results.map((r) => [path.basename(r.file), r.status, r.steps, r.code.source])).toEqual(
      files.map((f) => [`${f}b`, 'match', 8, 'bundle']),
    );
  });
});
