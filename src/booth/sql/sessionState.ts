/** What a StagedSql session keeps on disk (`sql-state.json`) and in its shadow's statement log. */
import fs from 'node:fs/promises';
import path from 'node:path';
import { lstatOrNull } from '../durable';
import { StagingCorruptError } from '../errors';
import type { AgentAccess, Dialect } from './dialect';
import { SqlConfigError } from './errors';
import type { SqlCommitResult, StagedStatement } from './stagedSql';
import type { Client } from './statement';

export type Session = {
  id: string;
  shadow: string;
  base: Record<string, string>;
  indirection: boolean;
  /** The shadow was made with its `_jukebox_steps` table. */
  steps?: true;
  /** pg: the login role the session's statements run as (see src/booth/sql/pgDialect.ts). */
  agent?: AgentAccess;
};

export type LoggedStatement = StagedStatement & { names: string[]; verb: string; result: string | null };

export type State = {
  format: typeof STATE_FORMAT;
  client: Client;
  target: string;
  session: Session | null;
  /** The last session this staging dir applied: a commit() retried after its session ended must still report it. */
  lastCommit?: SqlCommitResult | null;
};

// 2: the shadow carries row-tracking triggers and the log stores read results; a /1 session lacks both.
// 3: pg statements run as the session's own role, the bookkeeping in a schema of its own; SQLite's statements
// are checked as compiled. A /2 session would run unconfined: refused, like a /1 one.
export const STATE_FORMAT = 'jukebox-staged-sql/3';
export const STATE_FILE = 'sql-state.json';
export const MARKER = 'JUKEBOX_STAGED_SQL';
export const COMMITS = '_jukebox_commits';
export const LOG = '_jukebox_log';
/** Tool steps whose statements committed on the shadow, with the result the step returned. */
export const STEPS = '_jukebox_steps';
/**
 * On SQLite without a rowid: keyed by the step id alone, a step's checkpoint row writes one B-tree page, not a
 * table page and an index page, into the commit it shares with the step's statements.
 */
export function createStepsDdl(client: 'sqlite3' | 'pg'): string {
  const table = `CREATE TABLE IF NOT EXISTS ${STEPS} (id TEXT PRIMARY KEY, attempt INTEGER NOT NULL, result TEXT NOT NULL)`;
  return client === 'sqlite3' ? `${table} WITHOUT ROWID` : table;
}

export async function loadState(stagingDir: string, dialect: Dialect): Promise<State> {
  const fresh: State = {
    format: STATE_FORMAT,
    client: dialect.client,
    target: dialect.target,
    session: null,
  };
  const st = await lstatOrNull(stagingDir);
  if (st === null) return fresh;
  if (!st.isDirectory())
    throw new SqlConfigError(`stagingDir ${stagingDir} is not a directory; pick another path`);
  const names = await fs.readdir(stagingDir);
  if (names.length > 0 && !names.includes(MARKER))
    throw new SqlConfigError(
      `stagingDir ${stagingDir} is a non-empty directory that is not a StagedSql staging area (no ${MARKER}); pick an empty or new path`,
    );
  const file = path.join(stagingDir, STATE_FILE);
  let state: State;
  try {
    state = JSON.parse(await fs.readFile(file, 'utf8')) as State;
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return fresh;
    throw new StagingCorruptError(file, 'is not valid JSON', err);
  }
  if (state.format !== STATE_FORMAT)
    throw new StagingCorruptError(file, `unknown format ${String(state.format)}`);
  if (state.target !== dialect.target)
    throw new SqlConfigError(
      `stagingDir ${stagingDir} stages changes for ${state.target}, not ${dialect.target}; use another stagingDir`,
    );
  return state;
}
