/**
 * The Temporal workflow history of a run, stored beside its tape so one artifact answers both "what happened"
 * (the tape) and "is my current code still deterministic against it" (Temporal's replayer). The tape is sealed
 * by the run's last activity, before the history is complete, so the history cannot go inside it: it is
 * written content-addressed as `<blake3>.history` in the tape's folder, and a small sidecar
 * `<tape>.history.json` names it, with its hash, so a swapped or edited history file is detected.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { tapeFileName } from '../../recorder/naming';
import { blake3 } from '../../recorder/tape';
import { toHex } from '../../recorder/tape/hash';
import { HistoryMissingError } from '../../timetravel/replay/errors';

type History = temporal.api.history.v1.IHistory;
const HistoryMessage = temporal.api.history.v1.History;

export interface HistorySidecar {
  format: 1;
  /** File name of the history, in the tape's folder. */
  history: string;
  /** BLAKE3-256 of the history file, hex: its content address. */
  hash: string;
  eventCount: number;
  workflowId: string;
  runId: string;
}

export function sidecarPath(tapeFile: string): string {
  return `${tapeFile}.history.json`;
}

async function writeAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

/** Stores a history beside a tape. Identical histories share one file. */
export async function storeHistory(
  tapeFile: string,
  history: History,
  run: { workflowId: string; runId: string },
): Promise<HistorySidecar> {
  // Protobuf binary, the server's own encoding: exact, and what `temporal workflow show` can also read back.
  const bytes = HistoryMessage.encode(HistoryMessage.fromObject(history)).finish();
  const hash = toHex(blake3(bytes));
  const dir = path.dirname(tapeFile);
  await mkdir(dir, { recursive: true });
  const name = `${hash}.history`;
  if (!existsSync(path.join(dir, name))) await writeAtomic(path.join(dir, name), bytes);
  const sidecar: HistorySidecar = {
    format: 1,
    history: name,
    hash,
    eventCount: history.events?.length ?? 0,
    workflowId: run.workflowId,
    runId: run.runId,
  };
  await writeAtomic(sidecarPath(tapeFile), `${JSON.stringify(sidecar, null, 2)}\n`);
  return sidecar;
}

/**
 * Client side, after a run has closed: fetches its history and stores it beside its tape (in `tapeDir`, the
 * worker's tape folder). Returns the tape path it belongs to.
 */
export async function captureRunHistory(
  handle: WorkflowHandle,
  tapeDir: string,
): Promise<{ tapeFile: string; sidecar: HistorySidecar }> {
  const { runId } = await handle.describe();
  const history = await handle.fetchHistory();
  const tapeFile = path.join(tapeDir, tapeFileName(handle.workflowId, runId));
  const sidecar = await storeHistory(tapeFile, history, { workflowId: handle.workflowId, runId });
  return { tapeFile, sidecar };
}

export function hasStoredHistory(tapeFile: string): boolean {
  return existsSync(sidecarPath(tapeFile));
}

/** Reads the stored history of a tape, checking it against the hash the sidecar names. */
export function loadStoredHistory(tapeFile: string): { history: History; sidecar: HistorySidecar } {
  const car = sidecarPath(tapeFile);
  if (!existsSync(car)) throw new HistoryMissingError(tapeFile, `no ${path.basename(car)}`);
  const sidecar = JSON.parse(readFileSync(car, 'utf8')) as HistorySidecar;
  const file = path.join(path.dirname(tapeFile), sidecar.history);
  if (!existsSync(file))
    throw new HistoryMissingError(tapeFile, `${sidecar.history} named by the sidecar is gone`);
  const bytes = readFileSync(file);
  const hash = toHex(blake3(bytes));
  if (hash !== sidecar.hash)
    throw new HistoryMissingError(
      tapeFile,
      `${sidecar.history} hashes to ${hash}, not the ${sidecar.hash} the sidecar names`,
    );
  return { history: HistoryMessage.decode(bytes), sidecar };
}
