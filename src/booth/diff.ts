/** Unified line diffs for verifiers reading a change set; bounded so a huge file cannot stall changes(). */

import { printable } from '../errors';

const MAX_CELLS = 4_000_000;
const CONTEXT = 3;

export function isText(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

type Op = { t: ' ' | '-' | '+'; line: string; a: number; b: number };

/** Returns null when the inputs are too large for the quadratic LCS; callers then report sizes only. */
export function unifiedDiff(path: string, before: string, after: string): string | null {
  const a = splitLines(before);
  const b = splitLines(after);
  const n = a.length;
  const m = b.length;
  if ((n + 1) * (m + 1) > MAX_CELLS) return null;
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i * w + j] =
        a[i] === b[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) ops.push({ t: ' ', line: a[i++]!, a: i, b: ++j });
    // Deletions first on ties, so a replaced line reads "-old" then "+new" as in diff -u.
    else if (i < n && (j === m || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!))
      ops.push({ t: '-', line: a[i++]!, a: i, b: j });
    else ops.push({ t: '+', line: b[j++]!, a: i, b: j });
  }
  const out = [`--- a/${printable(path)}`, `+++ b/${printable(path)}`];
  let k = 0;
  while (k < ops.length) {
    if (ops[k]!.t === ' ') {
      k++;
      continue;
    }
    const start = Math.max(0, k - CONTEXT);
    let end = k;
    // Extend the hunk while the next change is within 2*CONTEXT unchanged lines, as diff -u does.
    for (let q = k; q < ops.length; q++) {
      if (ops[q]!.t !== ' ') end = q;
      else if (q - end > 2 * CONTEXT) break;
    }
    const stop = Math.min(ops.length, end + CONTEXT + 1);
    const hunk = ops.slice(start, stop);
    const aLen = hunk.filter((o) => o.t !== '+').length;
    const bLen = hunk.filter((o) => o.t !== '-').length;
    const aStart = countBefore(ops, start, '+') + (aLen > 0 ? 1 : 0);
    const bStart = countBefore(ops, start, '-') + (bLen > 0 ? 1 : 0);
    out.push(`@@ -${aStart},${aLen} +${bStart},${bLen} @@`);
    for (const o of hunk) out.push(`${o.t}${o.line}`);
    k = stop;
  }
  return `${out.join('\n')}\n`;
}

function countBefore(ops: Op[], idx: number, skip: '+' | '-'): number {
  let c = 0;
  for (let q = 0; q < idx; q++) if (ops[q]!.t !== skip) c++;
  return c;
}
