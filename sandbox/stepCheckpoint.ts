/**
 * A tool step's checkpoint: the proof that one attempt of the step staged everything it meant to and returned
 * this result. A retried attempt that finds it returns the recorded result and stages nothing; one that does
 * not find it throws the earlier attempt's partial staging away and starts clean. Never both.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { atomicWriteJson, fsyncDir, isCode, lstatOrNull } from './durable';
import { StagingCorruptError } from './errors';
import type { Layer } from './manifest';
import type { EscrowedCall } from './mcp/escrow';

export const CHECKPOINT_FORMAT = 'jukebox-step-checkpoint/1';
/** Written when an attempt starts, so the next one can say which attempt's staging it threw away. */
export const ATTEMPT_FILE = 'attempt.json';

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
  /** Which parts it staged (SQL: its statements committed on the shadow with the checkpoint row). */
  parts: { files: boolean; sql: boolean; mcp: number };
  /** What the step staged in files and MCP: merged into the run's staging from here, so it is never lost. */
  files: Layer | null;
  mcp: { id: string; calls: EscrowedCall[] } | null;
}

/** What a step's frames say about its staging: which attempt counted, and whether this attempt reused it. */
export interface StepStaging {
  attempt: number;
  reused: boolean;
  /** An earlier attempt whose partial staging this one threw away. */
  discarded?: number;
}

export async function readCheckpoint(file: string): Promise<StepCheckpoint | null> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return null;
    throw new StagingCorruptError(file, 'cannot be read', err);
  }
  let cp: StepCheckpoint;
  try {
    cp = JSON.parse(text) as StepCheckpoint;
  } catch (err) {
    throw new StagingCorruptError(file, 'is not valid JSON (the atomic writer never leaves a torn one)', err);
  }
  if (cp.format !== CHECKPOINT_FORMAT)
    throw new StagingCorruptError(file, `unknown format ${String(cp.format)}`);
  return cp;
}

/** The one durable write of a step without SQL (its layer, pending calls and marker are not fsynced). */
export async function writeCheckpoint(file: string, cp: StepCheckpoint): Promise<void> {
  await atomicWriteJson(file, cp);
}

/** Creates the run's steps folder durably, once, so checkpoint files written into it survive a power loss. */
export async function ensureStepsDir(dir: string): Promise<void> {
  if ((await lstatOrNull(dir)) !== null) return;
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fsyncDir(path.dirname(dir));
}

/** The attempt that last started this step, if any (informational: not fsynced). */
export async function previousAttempt(stepDir: string): Promise<number | null> {
  try {
    const v = JSON.parse(await fs.readFile(path.join(stepDir, ATTEMPT_FILE), 'utf8')) as {
      attempt?: unknown;
    };
    return typeof v.attempt === 'number' ? v.attempt : null;
  } catch {
    return null;
  }
}

export async function markAttempt(stepDir: string, attempt: number): Promise<void> {
  await fs.mkdir(stepDir, { recursive: true, mode: 0o700 });
  await fs.writeFile(path.join(stepDir, ATTEMPT_FILE), JSON.stringify({ attempt }));
}
