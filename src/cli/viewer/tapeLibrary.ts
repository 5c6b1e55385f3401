/**
 * The tapes one viewer serves: a single folder, addressed by tape id (file name without `.jbx`). Ids that
 * would leave the folder (separators, `..`, a symlink pointing elsewhere) are refused. Read tapes are kept
 * while their size and modification time are unchanged, so clicking around a run reads it once.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { readTape, type Tape, TapeError } from '../../recorder/tape';
import { diffTimelines, type TimelineDiff } from '../../timetravel/diff';
import type { Timeline } from '../../timetravel/replay/timeline';
import { buildRunView, type RunView, timelineOf, unreadableRun } from './runView';
import { type StepDetail, stepDetail } from './stepDetail';

export class TapeNotServedError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 404 | 422,
  ) {
    super(message);
  }
}

interface Loaded {
  key: string;
  tape: Tape | null;
  /** Built on first need (a diff): resolving every step's conversation is the costly part of reading a run. */
  timeline?: Timeline | null;
  run: RunView;
}

const MAX_CACHED = 8;
const WHOLE_FILE_MAX = 256 * 1024 * 1024;

export class TapeLibrary {
  readonly dir: string;
  private readonly realDir: string;
  private readonly cache = new Map<string, Loaded>();

  constructor(
    dir: string,
    private readonly temporal: (h: { workflowId: string; runId: string }) => string | null,
  ) {
    this.dir = path.resolve(dir);
    this.realDir = realpathSync(this.dir);
  }

  /** The file of a tape id, only if it is a tape directly inside the served folder. */
  fileOf(id: string): string {
    if (!id || id.length > 400 || /[/\\\0]/.test(id) || id === '.' || id === '..' || id.startsWith('.'))
      throw new TapeNotServedError(
        `refused: ${JSON.stringify(id.slice(0, 100))} is not a tape id in the served folder`,
        400,
      );
    const file = path.join(this.dir, `${id}.jbx`);
    let real: string;
    try {
      real = realpathSync(file);
    } catch {
      throw new TapeNotServedError(`no tape ${JSON.stringify(id)} in ${this.dir}`, 404);
    }
    if (path.dirname(real) !== this.realDir)
      throw new TapeNotServedError(
        `refused: tape ${JSON.stringify(id)} points outside the served folder`,
        400,
      );
    return file;
  }

  /** Whether `fileOf(id)` would serve it: the list must not offer a run the viewer then refuses to open. */
  serves(id: string): boolean {
    try {
      this.fileOf(id);
      return true;
    } catch {
      return false;
    }
  }

  private load(id: string): Loaded {
    const file = this.fileOf(id);
    const st = statSync(file);
    if (!st.isFile()) throw new TapeNotServedError(`${id} is not a file`, 404);
    const key = `${st.size}:${st.mtimeMs}`;
    const hit = this.cache.get(id);
    if (hit && hit.key === key) {
      this.cache.delete(id);
      this.cache.set(id, hit);
      return hit;
    }
    let loaded: Loaded;
    try {
      // One read of the whole file instead of two reads per frame (a 2,000-step tape has ~17,000 frames); a
      // tape too big to hold twice is read frame by frame from the file.
      const tape = readTape(st.size <= WHOLE_FILE_MAX ? readFileSync(file) : file, {
        recover: true,
        name: file,
      });
      loaded = { key, tape, run: buildRunView(id, file, st.size, tape) };
    } catch (err) {
      if (!(err instanceof TapeError)) throw err;
      loaded = { key, tape: null, timeline: null, run: unreadableRun(id, path.basename(file), st.size, err) };
    }
    this.cache.set(id, loaded);
    while (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
    return loaded;
  }

  run(id: string): RunView & { temporalUrl: string | null } {
    const { run } = this.load(id);
    return { ...run, temporalUrl: run.header ? this.temporal(run.header) : null };
  }

  step(id: string, i: number): StepDetail {
    const { tape, run } = this.load(id);
    const row = run.rows[i];
    if (!tape || !row) throw new TapeNotServedError(`tape ${id} has no row ${i}`, 404);
    return stepDetail(tape, row, run.header ? this.temporal(run.header) : null);
  }

  diff(a: string, b: string): TimelineDiff {
    const [x, y] = [this.load(a), this.load(b)];
    for (const l of [x, y])
      if (l.timeline === undefined) l.timeline = l.tape ? timelineOf(l.tape, this.fileOf(l.run.id)) : null;
    for (const [id, l] of [
      [a, x],
      [b, y],
    ] as const)
      if (!l.timeline)
        throw new TapeNotServedError(
          `tape ${id} cannot be read as a timeline (${l.run.verification.reason ?? 'no steps'}); only runs whose header and steps read can be compared`,
          422,
        );
    const d = diffTimelines(x.timeline!, y.timeline!);
    d.a.file = path.basename(d.a.file);
    d.b.file = path.basename(d.b.file);
    return d;
  }
}
