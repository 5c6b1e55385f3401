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
import { BLOBS_DIR } from './manifest';
import { keyRel } from './paths';
import { readReal } from './realTree';
import { treeChanges } from './treeStamp';

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
  /**
   * The mode asked for when it carried setuid, setgid or sticky bits the booth refused (and stripped: `after`
   * holds the mode that commits). Absent when the booth config allows them or none were asked for.
   */
  modeRefused?: { requested: number; bits: Array<'setuid' | 'setgid' | 'sticky'> };
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
    if (e.kind !== 'whiteout' && e.refusedMode !== undefined)
      c.modeRefused = { requested: e.refusedMode, bits: specialBits(e.refusedMode) };
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

function specialBits(mode: number): Array<'setuid' | 'setgid' | 'sticky'> {
  const bits: Array<'setuid' | 'setgid' | 'sticky'> = [];
  if (mode & 0o4000) bits.push('setuid');
  if (mode & 0o2000) bits.push('setgid');
  if (mode & 0o1000) bits.push('sticky');
  return bits;
}

/**
 * Real entries that no longer match what they were when first staged; for a directory the change set removes
 * or replaces, every entry inside it that was added, removed or changed since (its listing taken at staging).
 */
export async function conflictsOf(
  root: string,
  stagingDir: string,
  entries: Record<string, Entry>,
  readBlob: (hash: string) => Promise<Buffer>,
): Promise<string[]> {
  const out: string[] = [];
  for (const [key, e] of Object.entries(entries)) {
    const b = e.base;
    if (b.type === 'hidden') continue;
    await confirmParents(root, key);
    const abs = path.join(root, ...keyRel(key));
    const st = await lstatOrNull(abs);
    if (b.type === 'none') {
      if (st !== null) out.push(key);
    } else if (b.type === 'dir') {
      if (st === null || !st.isDirectory()) out.push(key);
      else if (b.tree !== undefined) {
        const listing = path.join(stagingDir, BLOBS_DIR, b.tree);
        for (const rel of await treeChanges(abs, await readBlob(b.tree), listing))
          out.push(rel === '' ? key : `${key}/${rel}`);
      }
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
