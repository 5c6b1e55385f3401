/**
 * A tool step's checkpoint: the proof that one attempt of the step staged everything it meant to and returned
 * this result. A retried attempt that finds it returns the recorded result and stages nothing; one that does
 * not find it throws the earlier attempt's partial staging away and starts clean. Never both.
 *
 * The checkpoint is the step's record in the run's files manifest (`steps[id]`: attempt and result), written by
 * the one atomic, fsynced manifest write that also merges the step's files layer (escrowed MCP calls join the
 * escrow just before it). A step that ran SQL first commits the whole checkpoint as a row of the shadow, in the
 * transaction holding its statements, so a crash between the two still finds it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
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
