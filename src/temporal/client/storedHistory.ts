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
import type { HistorySegment } from '../../timetravel/fork/historyPoint';
import { HistoryMissingError } from '../../timetravel/replay/errors';
import { fetchRunHistories } from './runChain';

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
  /**
   * A run that continued as new: the histories of its later executions, in order (the fields above are its
   * first's, whose run id names the tape).
   */
  segments?: { runId: string; history: string; hash: string; eventCount: number }[];
}

export function sidecarPath(tapeFile: string): string {
  return `${tapeFile}.history.json`;
}

async function writeAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

async function storeOne(
  dir: string,
  history: History,
): Promise<{ history: string; hash: string; eventCount: number }> {
  // Protobuf binary, the server's own encoding: exact, and what `temporal workflow show` can also read back.
  const bytes = HistoryMessage.encode(HistoryMessage.fromObject(history)).finish();
  const hash = toHex(blake3(bytes));
  const name = `${hash}.history`;
  if (!existsSync(path.join(dir, name))) await writeAtomic(path.join(dir, name), bytes);
  return { history: name, hash, eventCount: history.events?.length ?? 0 };
}

/**
 * Stores a run's history beside its tape: one history, or one per execution of a run that continued as new
 * (first to last). Identical histories share one file.
 */
export async function storeHistory(
  tapeFile: string,
  history: History | readonly HistorySegment[],
  run: { workflowId: string; runId: string },
): Promise<HistorySidecar> {
  const dir = path.dirname(tapeFile);
  await mkdir(dir, { recursive: true });
  const all: readonly HistorySegment[] = Array.isArray(history)
    ? history
    : [{ runId: run.runId, history: history as History }];
  const [first, ...later] = all;
  const sidecar: HistorySidecar = {
    format: 1,
    ...(await storeOne(dir, first!.history)),
    workflowId: run.workflowId,
    runId: run.runId,
  };
  if (later.length)
    sidecar.segments = await Promise.all(
      later.map(async (seg) => ({ runId: seg.runId, ...(await storeOne(dir, seg.history)) })),
    );
  await writeAtomic(sidecarPath(tapeFile), `${JSON.stringify(sidecar, null, 2)}\n`);
  return sidecar;
}

/**
 * Client side, after a run has closed: fetches its history (every execution's, for a run that continued as new)
 * and stores it beside its tape (in `tapeDir`, the worker's tape folder). Returns the tape path it belongs to.
 */
export async function captureRunHistory(
  handle: WorkflowHandle,
  tapeDir: string,
): Promise<{ tapeFile: string; sidecar: HistorySidecar }> {
  const runId = await runKeyOfHandle(handle, tapeDir);
  const tapeFile = path.join(tapeDir, tapeFileName(handle.workflowId, runId));
  const histories = await fetchRunHistories(handle.client, handle.workflowId, runId);
  const sidecar = await storeHistory(tapeFile, histories, { workflowId: handle.workflowId, runId });
  return { tapeFile, sidecar };
}

/**
 * The run a handle's tape is named after: the execution it started (a run that continued as new records on
 * its first execution's tape), else the chain's first execution when the folder holds its tape, else the
 * latest execution.
 */
async function runKeyOfHandle(handle: WorkflowHandle, tapeDir: string): Promise<string> {
  const started = (handle as { firstExecutionRunId?: string }).firstExecutionRunId;
  if (started) return started;
  const d = await handle.describe();
  const first = d.raw.workflowExecutionInfo?.firstRunId;
  if (first && existsSync(path.join(tapeDir, tapeFileName(handle.workflowId, first)))) return first;
  return d.runId;
}

export function hasStoredHistory(tapeFile: string): boolean {
  return existsSync(sidecarPath(tapeFile));
}

/**
 * Reads the stored history of a tape, checking each file against the hash the sidecar names: `history` is the
 * first execution's, `segments` every execution's (one for a run that never continued as new).
 */
export function loadStoredHistory(tapeFile: string): {
  history: History;
  sidecar: HistorySidecar;
  segments: HistorySegment[];
} {
  const car = sidecarPath(tapeFile);
  if (!existsSync(car)) throw new HistoryMissingError(tapeFile, `no ${path.basename(car)}`);
  const sidecar = JSON.parse(readFileSync(car, 'utf8')) as HistorySidecar;
  const read = (entry: { history: string; hash: string }) => {
    const file = path.join(path.dirname(tapeFile), entry.history);
    if (!existsSync(file))
      throw new HistoryMissingError(tapeFile, `${entry.history} named by the sidecar is gone`);
    const bytes = readFileSync(file);
    const hash = toHex(blake3(bytes));
    if (hash !== entry.hash)
      throw new HistoryMissingError(
        tapeFile,
        `${entry.history} hashes to ${hash}, not the ${entry.hash} the sidecar names`,
      );
    return HistoryMessage.decode(bytes);
  };
  const history = read(sidecar);
  const segments = [
    { runId: sidecar.runId, history },
    ...(sidecar.segments ?? []).map((seg) => ({ runId: seg.runId, history: read(seg) })),
  ];
  return { history, sidecar, segments };
}

/** The files of a stored history, first execution's first, as `jbx bundle` packs them. */
export function storedHistoryFiles(tapeFile: string): { runId: string; file: string; eventCount: number }[] {
  const sidecar = loadStoredHistory(tapeFile).sidecar;
  const dir = path.dirname(tapeFile);
  return [sidecar, ...(sidecar.segments ?? [])].map((e) => ({
    runId: e.runId,
    file: path.join(dir, e.history),
    eventCount: e.eventCount,
  }));
}
