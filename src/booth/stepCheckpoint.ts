/**
 * A tool step's checkpoint: the proof that one attempt of the step staged everything it meant to and returned
 * this result. A retried attempt that finds it returns the recorded result and stages nothing; one that does
 * not find it throws the earlier attempt's partial staging away and starts clean. Never both.
 *
 * The checkpoint is the step's record in the run's files step log (src/booth/stepLog.ts: attempt, result, the
 * step's files layer and the bytes of the blobs it wrote), appended and fdatasynced (escrowed MCP calls join the
 * escrow just before it); the run's change set is the manifest plus that log. A step that ran SQL first commits
 * the whole checkpoint as a row of the shadow, in the transaction holding its statements, so a crash between
 * the two still finds it.
 */
import { mkdirSync, readFileSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { isCode } from './durable';
import type { Layer } from './manifest';
import type { EscrowedCall } from './mcp/escrow';

export const CHECKPOINT_FORMAT = 'jukebox-step-checkpoint/1';
/**
 * Blob bytes a SQL checkpoint row carries at most (base64 in the row); past it the blobs' names are fsynced
 * before the row commits instead. Measured: up to a few KiB the bytes in the row cost the commit less than the
 * directory fsync; a row of megabytes would cost far more.
 */
export const MAX_ROW_BLOB_BYTES = 64 * 1024;
/**
 * The folder of attempt markers in a run's folder: `attempts/<step>` is written when an attempt starts, so the
 * next one knows an earlier attempt may have left partial staging and can say which attempt's it threw away.
 * Apart from `steps/`, so no step id's pending folder can be another step's marker.
 */
export const ATTEMPTS_DIR = 'attempts';

/** A tool step: its activity id within the run and the attempt running now. */
export interface BoothStep {
  id: string;
  attempt: number;
}

export interface StepCheckpoint {
  format: typeof CHECKPOINT_FORMAT;
  step: string;
  /** The attempt whose staging counted. */
  attempt: number;
  result: unknown;
  /** What the step staged in files and MCP: merged into the run's staging from here, so it is never lost. */
  files: Layer | null;
  /**
   * Base64 bytes of the blobs the files layer wrote, by sha256, so the checkpoint holds them without their
   * names in `blobs/` being durable; absent when they were too large to carry (their names were fsynced).
   */
  blobs?: Record<string, string>;
  mcp: { id: string; calls: EscrowedCall[] } | null;
}

/** What a step's frames say about its staging: which attempt counted, and whether this attempt reused it. */
export interface StepStaging {
  attempt: number;
  reused: boolean;
  /** An earlier attempt whose partial staging this one threw away. */
  discarded?: number;
}

/**
 * Marks `attempt` as started with one exclusive create (the common case: a step's first attempt) and returns
 * null; when an earlier attempt's marker is there, leaves it and returns that attempt, and the caller marks
 * this one with `markAttempt` once the earlier staging is gone. The marker is a symbolic link whose target is the
 * attempt number: one syscall, no data block. Informational, so not fsynced. Synchronous, like the lock files
 * (src/recorder/lock.ts): a few microseconds of syscalls, where each thread-pool round trip of the promise API
 * costs tens to hundreds of them on every tool step.
 */
export function claimAttempt(markerFile: string, attempt: number): number | null {
  try {
    symlinkSync(String(attempt), markerFile);
    return null;
  } catch (err) {
    if (isCode(err, 'ENOENT')) {
      // The run's first step: the markers' folder is made once.
      mkdirSync(path.dirname(markerFile), { recursive: true, mode: 0o700 });
      return claimAttempt(markerFile, attempt);
    }
    if (!isCode(err, 'EEXIST')) throw err;
  }
  return markedAttempt(markerFile);
}

/** The attempt an existing marker names; 0 when it names none (a marker an older version wrote cut short). */
function markedAttempt(markerFile: string): number {
  let text: string;
  try {
    text = readlinkSync(markerFile);
  } catch (err) {
    if (!isCode(err, 'EINVAL')) return 0;
    // A regular file: the JSON marker of an earlier version.
    try {
      const v = JSON.parse(readFileSync(markerFile, 'utf8')) as { attempt?: unknown };
      return typeof v.attempt === 'number' ? v.attempt : 0;
    } catch {
      return 0;
    }
  }
  return /^[0-9]+$/.test(text) ? Number(text) : 0;
}

export function markAttempt(markerFile: string, attempt: number): void {
  mkdirSync(path.dirname(markerFile), { recursive: true, mode: 0o700 });
  releaseAttempt(markerFile);
  symlinkSync(String(attempt), markerFile);
}

/** Removes the marker once the step's checkpoint is written (or was there already). */
export function releaseAttempt(markerFile: string): void {
  try {
    unlinkSync(markerFile);
  } catch (err) {
    if (!isCode(err, 'ENOENT')) throw err;
  }
}
