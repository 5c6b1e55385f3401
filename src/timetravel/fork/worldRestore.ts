/**
 * The world as it was at the fork frame: the parent's staged file writes (fs.mutation) and SQL statements
 * (sql.mutation) before the fork step, replayed in tape order into the fork's own staging area. File contents
 * come from the tape's blobs, never from today's disk, so a fork sees what the parent saw even after the real
 * files moved on.
 */

import type { Encoded } from '../../booth/sql/values';
import type { StagedWorkspace } from '../../booth/stagedWorkspace';
import { decodeBlob } from '../../recorder/tape';
import type { Timeline } from '../replay/timeline';
import { ForkWorldChangedError } from './errors';

/** The tables whose fingerprints differ between two `StagedSql.baseHash` values (sorted [table, fingerprint] lists). */
function changedTables(recorded: string, now: string): string[] {
  const parse = (h: string) => {
    try {
      return new Map(JSON.parse(h) as [string, string][]);
    } catch {
      return new Map<string, string>();
    }
  };
  const a = parse(recorded);
  const b = parse(now);
  const names = [...new Set([...a.keys(), ...b.keys()])].sort();
  const changed = names.filter((n) => a.get(n) !== b.get(n));
  return changed.length ? changed : ['(unknown)'];
}

type Files = Pick<StagedWorkspace, 'writeFile' | 'mkdir' | 'rm' | 'rename' | 'chmod'>;

export interface WorldTarget {
  files?: Files;
  /** StagedSql (or anything that replays sql.mutation frames in order and says what snapshot it started from). */
  sql?: {
    replay(frames: readonly { statement: string; params?: Encoded }[]): Promise<void>;
    readonly baseHash?: string | null;
  };
}

export interface RestoreReport {
  files: number;
  statements: number;
}

function bytesOf(t: Timeline, ref: unknown): Uint8Array {
  const hash = (ref as { hash?: string } | undefined)?.hash;
  const blob = hash ? t.tape.blobs.get(hash) : undefined;
  if (!blob) throw new Error(`fs.mutation content blob ${String(hash)} is missing from ${t.file}`);
  const v = decodeBlob(blob);
  if (v instanceof Uint8Array) return v;
  return new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
}

export async function restoreWorld(
  t: Timeline,
  forkStep: number,
  target: WorldTarget,
): Promise<RestoreReport> {
  const report: RestoreReport = { files: 0, statements: 0 };
  const sql: { statement: string; params?: Encoded }[] = [];
  let recordedBase: string | undefined;
  // Step by step, each step's counted effects only: a retried tool step's tape may also hold the frames of an
  // attempt whose staging was thrown away, and replaying those would stage the effect twice.
  const effects = t.steps.filter((s) => s.step < forkStep).flatMap((s) => s.effects);
  for (const f of effects) {
    const p = f.payload as Record<string, unknown>;
    if (f.kind === 'sql.mutation' && typeof p.statement === 'string') {
      // Only writes change the staged state; reads recorded as mutations would be harmless but pointless.
      if (p.kind === undefined || p.kind === 'write')
        sql.push({ statement: p.statement, params: p.params as Encoded });
      if (recordedBase === undefined && typeof p.base === 'string') recordedBase = p.base;
      continue;
    }
    if (f.kind !== 'fs.mutation' || !target.files) continue;
    const fsPath = String(p.path);
    const mode = typeof p.mode === 'number' ? p.mode : undefined;
    switch (p.op) {
      case 'write':
      case 'append':
        // `after` is the whole content after the operation, so an append restores as a write.
        await target.files.writeFile(fsPath, bytesOf(t, p.after), mode === undefined ? {} : { mode });
        break;
      case 'mkdir':
        await target.files.mkdir(fsPath, {
          recursive: p.recursive === true,
          ...(mode === undefined ? {} : { mode }),
        });
        break;
      case 'rm':
        await target.files.rm(fsPath, { recursive: p.recursive === true, force: p.force === true });
        break;
      case 'rename':
        await target.files.rename(String(p.from), fsPath);
        break;
      case 'chmod':
        if (mode !== undefined) await target.files.chmod(fsPath, mode);
        break;
      default:
        continue;
    }
    report.files++;
  }
  if (sql.length && target.sql) {
    await target.sql.replay(sql);
    // The fork's session snapshots today's database on its first statement; the parent's statements rebuild
    // the parent's staged state only on top of the rows the parent started from.
    const now = target.sql.baseHash;
    if (recordedBase !== undefined && typeof now === 'string' && now !== recordedBase)
      throw new ForkWorldChangedError(t.file, changedTables(recordedBase, now));
    report.statements = sql.length;
  }
  return report;
}
