/**
 * The catalog's cache: one file in the tape folder (`.jbx-catalog.json`) holding each tape's row under a key
 * made of its size, modification and change times and inode. Tapes are append-only, so any write to one
 * changes its size or times and the next listing reads that tape again; rows of tapes that are gone are
 * dropped. The file is only a cache: unreadable, from another format, or not writable (a read-only folder),
 * listing still works, reading every tape.
 */
import { readFileSync, renameSync, type Stats, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { RolledBack } from '../boothOutcome';
import type { TapeRow } from './tapeRow';

export const CATALOG_INDEX_FILE = '.jbx-catalog.json';
// 2: rows say whether the run's staging was rolled back; rows of format 1 lack it and are read again.
const FORMAT = 2;

/** A row without what the folder and file name give back (so the folder can move). */
export type StoredRow = Omit<TapeRow, 'id' | 'file'>;

/**
 * One tape as a flat array (a JSON array of arrays parses several times faster than as many objects, and
 * listing 10,000 tapes is mostly parsing this file): name, stat key, then the row's fields in this order.
 * `tapeId` is stored as null when it is the recorder's `workflowId/runId`.
 */
type Entry = [
  name: string,
  key: string,
  tapeId: string | null,
  workflow: string | null,
  workflowId: string | null,
  runId: string | null,
  startedMs: number | null,
  steps: number,
  frames: number,
  outcome: string,
  tripped: 0 | 1,
  inputTokens: number,
  outputTokens: number,
  cost: number | null,
  bytes: number,
  problem: string | null,
  rolledBack: RolledBack | null,
];

interface IndexFile {
  format: number;
  tapes: Entry[];
}

export function statKey(s: Stats): string {
  return `${s.size}:${s.mtimeMs}:${s.ctimeMs}:${s.ino}`;
}

function encode(name: string, key: string, r: StoredRow): Entry {
  const derived = r.workflowId !== null && r.runId !== null && r.tapeId === `${r.workflowId}/${r.runId}`;
  return [
    name,
    key,
    derived ? null : r.tapeId,
    r.workflow,
    r.workflowId,
    r.runId,
    r.startedMs,
    r.steps,
    r.frames,
    r.outcome,
    r.tripped ? 1 : 0,
    r.inputTokens,
    r.outputTokens,
    r.cost,
    r.bytes,
    r.problem,
    r.rolledBack,
  ];
}

function decode(e: Entry): StoredRow {
  const [, , tapeId, workflow, workflowId, runId, startedMs, steps, frames, outcome, tripped, inT, outT] = e;
  return {
    tapeId: tapeId ?? (workflowId !== null && runId !== null ? `${workflowId}/${runId}` : null),
    workflow,
    workflowId,
    runId,
    started: startedMs === null ? null : new Date(startedMs).toISOString(),
    startedMs,
    steps,
    frames,
    outcome,
    tripped: tripped === 1,
    tokens: inT + outT,
    inputTokens: inT,
    outputTokens: outT,
    cost: e[13],
    bytes: e[14],
    problem: e[15],
    rolledBack: e[16],
  };
}

export class CatalogIndex {
  private changed = false;

  private constructor(
    readonly file: string,
    private readonly entries: Map<string, Entry>,
  ) {}

  static load(dir: string): CatalogIndex {
    const file = path.join(dir, CATALOG_INDEX_FILE);
    const entries = new Map<string, Entry>();
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as IndexFile;
      if (parsed.format === FORMAT && Array.isArray(parsed.tapes))
        for (const e of parsed.tapes)
          if (Array.isArray(e) && e.length === 17 && typeof e[0] === 'string') entries.set(e[0], e);
    } catch {
      entries.clear();
    }
    return new CatalogIndex(file, entries);
  }

  /** The cached row of a tape, when the tape has not changed since it was read. */
  get(name: string, key: string): StoredRow | undefined {
    const e = this.entries.get(name);
    return e && e[1] === key ? decode(e) : undefined;
  }

  set(name: string, key: string, row: StoredRow): void {
    this.entries.set(name, encode(name, key, row));
    this.changed = true;
  }

  /** Drops the rows of tapes no longer in the folder. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.entries.keys())
      if (!names.has(name)) {
        this.entries.delete(name);
        this.changed = true;
      }
  }

  /** Writes the index when it changed: to a temporary file renamed over it, so readers never see half. */
  save(): boolean {
    if (!this.changed) return false;
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(
        tmp,
        JSON.stringify({ format: FORMAT, tapes: [...this.entries.values()] } satisfies IndexFile),
      );
      renameSync(tmp, this.file);
      this.changed = false;
      return true;
    } catch {
      try {
        unlinkSync(tmp);
      } catch {}
      return false;
    }
  }
}
