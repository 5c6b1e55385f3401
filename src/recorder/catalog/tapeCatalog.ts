/**
 * The recordings in a tape folder as typed rows (outcome, start, steps, cost, workflow...), filtered, sorted
 * and limited. Each tape is read (every frame verified) once; later listings take its row from the folder's
 * catalog index while the tape's size and times are unchanged, so listing many tapes costs about one `stat`
 * per tape.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { CatalogIndex, type StoredRow, statKey } from './catalogIndex';
import { applyQuery, type TapeQuery } from './query';
import { rowFromSummary, type TapeRow } from './tapeRow';

// Loaded on first use: the tape reader pulls in hashing and MessagePack code that a listing answered wholly
// from the index never needs, and start-up time is most of what `jbx ls` costs. `require` under tsx (how jbx
// runs); hosts whose require cannot load TypeScript (vitest) take the import().
type SummaryModule = typeof import('../summary');
let summaryModule: Promise<SummaryModule> | undefined;
function loadSummary(): Promise<SummaryModule> {
  summaryModule ??= (async () => {
    try {
      return require('../summary') as SummaryModule;
    } catch {
      return await import('../summary');
    }
  })();
  return summaryModule;
}
// src/recorder/store's tapeDirFromEnv rule, restated so listing need not load the store (a test keeps them equal).
const DEFAULT_TAPE_DIR = '.jukebox/tapes';
export function catalogDirFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.JUKEBOX_TAPE_DIR?.trim() || DEFAULT_TAPE_DIR);
}

export interface TapeCatalogOptions {
  /** Tape folder; default `$JUKEBOX_TAPE_DIR`, else `.jukebox/tapes`. */
  dir?: string;
  /** Keep and use the folder's catalog index (default true). false reads every tape, every time. */
  index?: boolean;
  /** Called while tapes are being read (not for rows taken from the index). */
  onProgress?: (p: { read: number; toRead: number; tape: string }) => void;
}

export interface CatalogListing {
  dir: string;
  /** Rows after the query. */
  rows: TapeRow[];
  /** Tapes in the folder before filtering. */
  total: number;
  /** Tapes read this time (new or changed since the index last saw them). */
  read: number;
}

export class TapeCatalog {
  readonly dir: string;
  private readonly useIndex: boolean;
  private readonly onProgress: TapeCatalogOptions['onProgress'];

  constructor(options: TapeCatalogOptions = {}) {
    this.dir = options.dir ? path.resolve(options.dir) : catalogDirFromEnv();
    this.useIndex = options.index ?? true;
    this.onProgress = options.onProgress;
  }

  /** Tape file names in the folder, sorted; an absent folder has none. */
  private names(): string[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    return names.filter((n) => n.endsWith('.jbx')).sort();
  }

  /** Every recording in the folder, then the query applied. */
  async list(query: TapeQuery = {}): Promise<CatalogListing> {
    const names = this.names();
    const index = this.useIndex ? CatalogIndex.load(this.dir) : undefined;
    const rows: TapeRow[] = [];
    const stale: { name: string; key: string }[] = [];
    const present = new Set<string>();
    for (const name of names) {
      const file = path.join(this.dir, name);
      // Gone between readdir and stat: not a recording any more.
      const st = statSync(file, { throwIfNoEntry: false });
      if (!st?.isFile()) continue;
      const key = statKey(st);
      present.add(name);
      const cached = index?.get(name, key);
      if (cached) rows.push({ ...cached, id: name.slice(0, -4), file });
      else stale.push({ name, key });
    }
    const summary = stale.length ? await loadSummary() : undefined;
    stale.forEach(({ name, key }, i) => {
      this.onProgress?.({ read: i, toRead: stale.length, tape: name });
      const row = rowFromSummary(summary!.summarizeTape(path.join(this.dir, name)));
      rows.push(row);
      const { id: _id, file: _file, ...stored } = row;
      // A tape still being written is re-read next time anyway (its size changes); damaged ones stay damaged.
      index?.set(name, key, stored satisfies StoredRow);
    });
    if (index) {
      index.retain(present);
      index.save();
    }
    return { dir: this.dir, rows: applyQuery(rows, query), total: rows.length, read: stale.length };
  }

  /** The rows only: `list(query).rows`. */
  async rows(query: TapeQuery = {}): Promise<TapeRow[]> {
    return (await this.list(query)).rows;
  }
}

/** One-call form: the recordings in `dir` (default tape folder) matching `query`. */
export function listTapes(query: TapeQuery & { dir?: string } = {}): Promise<TapeRow[]> {
  const { dir, ...q } = query;
  return new TapeCatalog(dir ? { dir } : {}).rows(q);
}
