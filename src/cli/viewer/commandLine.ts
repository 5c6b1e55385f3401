/** What a person copies out of the viewer: the `jbx fork` command for a step, and the run in the Temporal Web UI. */
import path from 'node:path';

/** POSIX shell quoting: bare when only safe characters, else single quotes. */
export function shellQuote(s: string): string {
  if (/^[\w@%+=:,./-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * `jbx fork TAPE --at STEP`, with TAPE relative to `cwd` (where the viewer was started, so where the person's
 * shell most likely is) when the tape lies under it, else absolute.
 */
export function forkCommandLine(file: string, step: number, cwd = process.cwd()): string {
  const rel = path.relative(cwd, file);
  const shown = rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : path.resolve(file);
  return `jbx fork ${shellQuote(shown)} --at ${step}`;
}

export function temporalRunUrl(ui: string, namespace: string, workflowId: string, runId: string): string {
  const e = encodeURIComponent;
  return `${ui.replace(/\/+$/, '')}/namespaces/${e(namespace)}/workflows/${e(workflowId)}/${e(runId)}`;
}
