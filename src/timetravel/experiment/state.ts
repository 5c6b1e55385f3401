/**
 * An experiment's state file, which makes it resumable: JSON lines, the first naming the experiment (its id,
 * change and runs), then one line per finished run, appended and fsynced as each finishes. A run whose line is
 * there is not run again; a torn last line (the process killed while writing it) ends the valid log and is cut
 * off before the next append.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ExperimentStateError } from './errors';
import type { ExperimentChange, ExperimentRunResult } from './types';

export interface ExperimentStateHeader {
  kind: 'jukebox.experiment';
  version: 1;
  id: string;
  change: ExperimentChange;
  dir: string;
  /** The recordings, frozen when the experiment started: a resumed experiment runs exactly these. */
  tapes: string[];
  startedAt: string;
}

export class ExperimentState {
  private constructor(
    readonly file: string,
    readonly header: ExperimentStateHeader,
    readonly finished: Map<string, ExperimentRunResult>,
  ) {}

  /** Opens the state of experiment `header.id` at `file`, creating it, or resuming what it holds. */
  static open(file: string, header: ExperimentStateHeader): ExperimentState {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    if (!fs.existsSync(file) || fs.statSync(file).size === 0) {
      writeSynced(file, `${JSON.stringify(header)}\n`, 'w');
      return new ExperimentState(file, header, new Map());
    }
    const text = fs.readFileSync(file, 'utf8');
    const lines = text.split('\n');
    let valid = 0;
    const parsed: unknown[] = [];
    for (const [i, line] of lines.entries()) {
      if (i === lines.length - 1) break; // the text after the last newline: empty, or a torn line
      try {
        parsed.push(JSON.parse(line));
      } catch {
        break;
      }
      valid += Buffer.byteLength(line) + 1;
    }
    const first = parsed[0] as Partial<ExperimentStateHeader> | undefined;
    if (first?.kind !== 'jukebox.experiment' || first.version !== 1)
      throw new ExperimentStateError(file, 'not a jbx experiment state file (version 1)');
    if (first.id !== header.id)
      throw new ExperimentStateError(
        file,
        `it holds experiment ${first.id} (${JSON.stringify(first.change)} over ${first.tapes?.length ?? 0} runs), not ${header.id}`,
      );
    // Cut a torn tail, so the next line starts on a line of its own.
    if (valid < Buffer.byteLength(text)) fs.truncateSync(file, valid);
    const finished = new Map<string, ExperimentRunResult>();
    for (const r of parsed.slice(1) as ExperimentRunResult[]) if (r.status === 'done') finished.set(r.id, r);
    return new ExperimentState(file, first as ExperimentStateHeader, finished);
  }

  /** Records a finished run durably before the experiment moves on. */
  record(result: ExperimentRunResult): void {
    writeSynced(this.file, `${JSON.stringify(result)}\n`, 'a');
    if (result.status === 'done') this.finished.set(result.id, result);
  }
}

function writeSynced(file: string, text: string, flag: 'w' | 'a'): void {
  const fd = fs.openSync(file, flag);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
