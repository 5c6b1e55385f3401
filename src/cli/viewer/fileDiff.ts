/**
 * A line diff for staged file contents (previous staged version on the tape → this write). Myers' O(ND)
 * algorithm with a cap on the edit distance it explores: past the cap the change is shown as "everything
 * replaced", which stays correct and keeps a huge rewrite from costing quadratic time.
 */
export interface DiffLine {
  op: ' ' | '+' | '-';
  text: string;
}

const MAX_LINES = 5_000;
const MAX_EDITS = 2_000;

export function lineDiff(before: string, after: string): DiffLine[] {
  const a = splitLines(before).slice(0, MAX_LINES);
  const b = splitLines(after).slice(0, MAX_LINES);
  // Common head and tail first: most staged edits touch a few lines of a longer file.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  const middle = myers(a.slice(head, a.length - tail), b.slice(head, b.length - tail));
  return [
    ...a.slice(0, head).map((text) => ({ op: ' ' as const, text })),
    ...middle,
    ...a.slice(a.length - tail).map((text) => ({ op: ' ' as const, text })),
  ];
}

function splitLines(s: string): string[] {
  if (s === '') return [];
  const lines = s.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function myers(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_EDITS);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!)
          ? v[offset + k + 1]!
          : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0)
    return [
      ...a.map((text) => ({ op: '-' as const, text })),
      ...b.map((text) => ({ op: '+' as const, text })),
    ];
  const out: DiffLine[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && vd[offset + k - 1]! < vd[offset + k + 1]!) ? k + 1 : k - 1;
    const prevX = vd[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      out.push({ op: ' ', text: a[--x]! });
      y--;
    }
    if (x === prevX) out.push({ op: '+', text: b[--y]! });
    else out.push({ op: '-', text: a[--x]! });
  }
  while (x > 0 && y > 0) {
    out.push({ op: ' ', text: a[--x]! });
    y--;
  }
  return out.reverse();
}
