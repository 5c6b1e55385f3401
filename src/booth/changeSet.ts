/**
 * The staged change set as verifiers, gates and commit see it: each staged entry with its state before and
 * after, sizes and a text diff; and the real entries that changed since they were staged (commit conflicts).
 */
import path from 'node:path';
import { confirmParents } from './commit';
import { isText, unifiedDiff } from './diff';
import { lstatOrNull, sha256 } from './durable';
import { byRel, summarize } from './entryChanges';
import type { Base, Entry } from './manifest';
import { keyRel } from './paths';
import { readReal } from './realTree';

export type ChangeOp = 'write' | 'delete' | 'mkdir' | 'chmod' | 'rename';

export interface Change {
  path: string;
  op: ChangeOp;
  /** For a rename: where the entry came from. */
  from?: string;
  /** The state after commit. */
  after:
    | { type: 'file'; hash: string; size: number; mode: number }
    | { type: 'dir'; mode: number }
    | { type: 'none' };
  /** What the real tree held when the path was first staged. */
  before: Base;
  bytesBefore: number;
  bytesAfter: number;
  /** Unified line diff, for text files of bounded size. */
  diff?: string;
  /** One line a human or a verifier model can read. */
  summary: string;
}

/** The change set of `entries` over the real tree at `root`, parents before children. */
export async function changeSetOf(
  root: string,
  entries: Record<string, Entry>,
  readBlob: (hash: string) => Promise<Buffer>,
): Promise<Change[]> {
  const out: Change[] = [];
  for (const key of Object.keys(entries).sort(byRel)) {
    const e = entries[key]!;
    const before = e.base;
    const bytesBefore = before.type === 'file' ? before.size : 0;
    let after: Change['after'];
    let op: ChangeOp;
    if (e.kind === 'whiteout') {
      after = { type: 'none' };
      op = 'delete';
    } else if (e.kind === 'dir') {
      after = { type: 'dir', mode: e.mode };
      op = e.op;
    } else {
      after = { type: 'file', hash: e.hash, size: e.size, mode: e.mode };
      op = e.op === 'write' && before.type === 'file' && before.hash === e.hash ? 'chmod' : e.op;
    }
    const bytesAfter = after.type === 'file' ? after.size : 0;
    const c: Change = { path: key, op, before, after, bytesBefore, bytesAfter, summary: '' };
    if (e.kind !== 'whiteout' && e.from !== undefined) c.from = e.from;
    if (e.kind === 'file') {
      const now = await readBlob(e.hash);
      const old = before.type === 'file' ? await realIfUnchanged(root, key, before.hash) : Buffer.alloc(0);
      if (old !== null && isText(now) && isText(old)) {
        const d = unifiedDiff(key, old.toString('utf8'), now.toString('utf8'));
        if (d !== null) c.diff = d;
      }
    }
    c.summary = summarize(c);
    out.push(c);
  }
  return out;
}

/** Real entries that no longer match what they were when first staged. */
export async function conflictsOf(root: string, entries: Record<string, Entry>): Promise<string[]> {
  const out: string[] = [];
  for (const [key, e] of Object.entries(entries)) {
    const b = e.base;
    if (b.type === 'hidden') continue;
    await confirmParents(root, key);
    const st = await lstatOrNull(path.join(root, ...keyRel(key)));
    if (b.type === 'none') {
      if (st !== null) out.push(key);
    } else if (b.type === 'dir') {
      if (st === null || !st.isDirectory()) out.push(key);
    } else if (st === null || !st.isFile() || (st.mode & 0o7777) !== b.mode) {
      out.push(key);
    } else if ((await realIfUnchanged(root, key, b.hash)) === null) out.push(key);
  }
  return out.sort(byRel);
}

async function realIfUnchanged(root: string, key: string, hash: string): Promise<Buffer | null> {
  try {
    const rel = keyRel(key);
    const st = await lstatOrNull(path.join(root, ...rel));
    if (st === null || !st.isFile()) return null;
    const data = await readReal(root, rel, st, key);
    return sha256(data) === hash ? data : null;
  } catch {
    return null;
  }
}
