import { blake3 } from './tape';
import { toHex } from './tape/hash';

// Keep names readable, but add a hash when sanitizing changed them so two ids never share a file.
function safe(part: string): string {
  const cleaned = part.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 120);
  if (cleaned === part && part.length > 0) return part;
  return `${cleaned}-${toHex(blake3(new TextEncoder().encode(part))).slice(0, 10)}`;
}

/** One file per run: `<workflowId>--<runId>.jbx`. */
export function tapeFileName(workflowId: string, runId: string): string {
  return `${safe(workflowId)}--${safe(runId)}.jbx`;
}

/** Derived from the run, so every process that writes the run's tape agrees on it without talking. */
export function tapeIdFor(workflowId: string, runId: string): string {
  return `${workflowId}/${runId}`;
}
