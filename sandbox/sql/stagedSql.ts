/**
 * The SQL part of the Shadow Booth. Statements run against a shadow (a copy of the SQLite file, or a copy of
 * the PostgreSQL schema) taken at open; each statement and its log row commit together on the shadow, so the
 * shadow and the statement log never disagree, even across a crash. commit() replays the logged writes on the
 * real database in one transaction after checking that the tables the run used did not change since the
 * snapshot, checks the replay produced exactly the shadow's contents, and stores an undo image next to an
 * idempotency marker in that same transaction. See docs/shadow-booth.md.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import { currentActivityTape } from '../../recorder/activityTape';
import { atomicWriteJson, lstatOrNull } from '../durable';
import { StagingCorruptError } from '../errors';
import { type Dialect, pgDialect, quoteIdent, sqliteDialect } from './dialect';
import {
  SqlCommitFailedError,
  SqlCompensationError,
  SqlConfigError,
  SqlConflictError,
  SqlReplayDivergedError,
  SqlStatementError,
} from './errors';
import { analyze, type Client } from './statement';
import { type Bindings, decodeBindings, type Encoded, encodeBindings } from './values';

export interface StagedSqlOptions {
  client: Client;
  /** sqlite3: the database file (`{ filename }` or a path); pg: a knex/pg connection config or URL. */
  connection: string | { filename: string } | Knex.PgConnectionConfig;
  /** Holds the session state (and for SQLite the shadow file); reopening it continues the same staged state. */
  stagingDir: string;
  /** pg only: the schema that is shadowed (default `public`). */
  schema?: string;
  /** Called at `commit:applied` (real transaction committed, local state not yet cleared) so tests can crash there. */
  faultPoint?: (name: string) => void | Promise<void>;
}

export interface SqlQueryResult {
  rows: Record<string, unknown>[];
  rowsAffected: number;
}

export interface StagedStatement {
  seq: number;
  kind: 'read' | 'write';
  statement: string;
  /** JSON-safe bindings (bytes as `{ $bytes }`, see sandbox/sql/values.ts). */
  params: Encoded;
  rowsAffected: number;
}

export interface SqlWriteSet {
  sessionId: string | null;
  client: Client;
  target: string;
  /** The write statements commit() would replay, in order. */
  statements: StagedStatement[];
  /** Tables whose shadow contents differ from the snapshot, with row counts. */
  tables: { name: string; rowsBefore: number | null; rowsAfter: number | null }[];
  rowsAffected: number;
}

export interface SqlCommitResult {
  commitId: string | null;
  client: Client;
  target: string;
  applied: boolean;
  statements: number;
  rowsAffected: number;
  /** Tables checked for conflicts and covered by the undo image. */
  tables: string[];
  /** False when the commit dropped or altered tables, which compensate() cannot restore. */
  undoable: boolean;
  /** True when the commit had already been applied by an earlier attempt (a retry after a crash). */
  recovered: boolean;
}

export interface SqlCompensateResult {
  commitId: string;
  tables: string[];
  /** True when an earlier call had already undone it. */
  recovered: boolean;
}

type Session = {
  id: string;
  shadow: string;
  base: Record<string, string>;
  indirection: boolean;
};

type State = { format: typeof STATE_FORMAT; client: Client; target: string; session: Session | null };

const STATE_FORMAT = 'jukebox-staged-sql/1';
const STATE_FILE = 'sql-state.json';
const MARKER = 'JUKEBOX_STAGED_SQL';
const COMMITS = '_jukebox_commits';
const LOG = '_jukebox_log';

function rowCount(fp: string): number | null {
  return fp === 'absent' ? null : Number(fp.split(':')[0]);
}

export class StagedSql {
  readonly client: Client;
  readonly stagingDir: string;
  private readonly dialect: Dialect;
  private state: State;
  private shadowDb: Knex | null = null;
  private schemas: Set<string>;
  private queue: Promise<unknown> = Promise.resolve();
  private fault: (name: string) => void | Promise<void> = () => {};

  private constructor(dialect: Dialect, stagingDir: string, state: State, schemas: Set<string>) {
    this.dialect = dialect;
    this.client = dialect.client;
    this.stagingDir = stagingDir;
    this.state = state;
    this.schemas = schemas;
  }

  /**
   * Opens the real database and either continues the session a previous process left in `stagingDir` or takes
   * a new snapshot (cost: a copy of the database, O(its size)).
   */
  static async open(o: StagedSqlOptions): Promise<StagedSql> {
    if (o.client !== 'sqlite3' && o.client !== 'pg')
      throw new SqlConfigError(`client ${String(o.client)} is not supported; use 'sqlite3' or 'pg'`);
    if (typeof o.stagingDir !== 'string' || o.stagingDir === '')
      throw new SqlConfigError('stagingDir is required: the staged state lives there');
    const stagingDir = path.resolve(o.stagingDir);
    let dialect: Dialect;
    if (o.client === 'sqlite3') {
      const file =
        typeof o.connection === 'string' ? o.connection : (o.connection as { filename?: string }).filename;
      if (typeof file !== 'string' || file === '' || file === ':memory:')
        throw new SqlConfigError(
          'sqlite3 needs a database file path (connection: { filename }); :memory: cannot be staged',
        );
      let real: string;
      try {
        real = await fs.realpath(file);
      } catch (err) {
        throw new SqlConfigError(`database file ${file} does not exist; create it first`, err);
      }
      dialect = sqliteDialect(real);
    } else {
      dialect = pgDialect({
        connection: o.connection as Knex.PgConnectionConfig | string,
        schema: o.schema ?? 'public',
      });
    }
    try {
      const schemas = await dialect.forbiddenSchemas();
      const state = await loadState(stagingDir, dialect);
      const sql = new StagedSql(dialect, stagingDir, state, schemas);
      if (o.faultPoint) sql.fault = o.faultPoint;
      if (state.session === null) await sql.exclusive(() => sql.newSession());
      return sql;
    } catch (err) {
      await dialect.close();
      if (err instanceof SqlConfigError || err instanceof StagingCorruptError) throw err;
      throw new SqlConfigError(
        `cannot open the ${o.client} database: ${err instanceof Error ? err.message : String(err)}; check the connection settings`,
        err,
      );
    }
  }

  /** The session (and commit) id; a fork replaying this run's frames checks `baseHash` against its own. */
  get sessionId(): string | null {
    return this.state.session?.id ?? null;
  }

  /** Fingerprint of the snapshot the session started from (all tables). */
  get baseHash(): string | null {
    const s = this.state.session;
    return s === null ? null : JSON.stringify(Object.entries(s.base).sort());
  }

  /** Runs one statement on the shadow. Reads see this run's staged writes. Refused statements change nothing. */
  async query(sql: string, bindings?: Bindings): Promise<SqlQueryResult> {
    return this.exclusive(async () => {
      const a = analyze(sql, this.client, this.schemas);
      const session = this.state.session ?? (await this.newSession());
      const shadow = this.shadow(session);
      const write = a.kind === 'write';
      let result: SqlQueryResult;
      let seq: number;
      const params = encodeBindings(bindings);
      try {
        ({ result, seq } = await shadow.transaction(async (trx) => {
          const r = await this.dialect.exec(trx, sql, bindings ?? [], write);
          const log = await trx.raw(
            `INSERT INTO ${LOG} (kind, statement, params, rows_affected, names, verb) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq`,
            [a.kind, sql, JSON.stringify(params), r.rowsAffected, JSON.stringify([...a.names]), a.verb],
          );
          const rows = (Array.isArray(log) ? log : log.rows) as { seq: number | string }[];
          return { result: r, seq: Number(rows[0]!.seq) };
        }));
      } catch (err) {
        throw new SqlStatementError(sql, err);
      }
      const tape = currentActivityTape();
      tape?.effect('sql.mutation', () => ({
        statement: sql,
        params,
        rowsAffected: result.rowsAffected,
        kind: a.kind,
        seq,
        client: this.client,
        session: session.id,
        base: this.baseHash,
      }));
      return result;
    });
  }

  /**
   * Replays statements recorded on a tape (sql.mutation frames, in order) into this session, which rebuilds the
   * staged state of the recorded run when this session starts from the same base (compare `baseHash`).
   */
  async replay(frames: readonly { statement: string; params?: Encoded }[]): Promise<void> {
    for (const f of frames) await this.query(f.statement, decodeBindings(f.params ?? []));
  }

  /** What commit() would apply: the write statements in order and the tables whose contents they change. */
  async writeSet(): Promise<SqlWriteSet> {
    return this.exclusive(async () => {
      const s = this.state.session;
      const empty: SqlWriteSet = {
        sessionId: null,
        client: this.client,
        target: this.dialect.target,
        statements: [],
        tables: [],
        rowsAffected: 0,
      };
      if (s === null) return empty;
      const statements = (await this.log(s)).filter((x) => x.kind === 'write');
      const shadow = this.shadow(s);
      const names = new Set([...Object.keys(s.base), ...(await this.dialect.listTables(shadow))]);
      const tables: SqlWriteSet['tables'] = [];
      for (const name of [...names].sort()) {
        const before = s.base[name] ?? 'absent';
        const after = await this.dialect.fingerprint(shadow, name);
        if (before !== after) tables.push({ name, rowsBefore: rowCount(before), rowsAfter: rowCount(after) });
      }
      return {
        sessionId: s.id,
        client: this.client,
        target: this.dialect.target,
        statements,
        tables,
        rowsAffected: statements.reduce((n, x) => n + x.rowsAffected, 0),
      };
    });
  }

  /**
   * Applies the staged writes to the real database in one transaction, or nothing. Safe to call again after a
   * crash: the commit id is stored with the change, so a second call finds it and returns `recovered: true`.
   */
  async commit(): Promise<SqlCommitResult> {
    return this.exclusive(async () => {
      const s = this.state.session;
      const base: SqlCommitResult = {
        commitId: s?.id ?? null,
        client: this.client,
        target: this.dialect.target,
        applied: false,
        statements: 0,
        rowsAffected: 0,
        tables: [],
        undoable: true,
        recovered: false,
      };
      if (s === null) return base;
      const log = await this.log(s);
      const writes = log.filter((x) => x.kind === 'write');
      const shadow = this.shadow(s);
      const shadowTables = await this.dialect.listTables(shadow);
      const known = new Set([...Object.keys(s.base), ...shadowTables]);
      const touched = s.indirection
        ? [...known].sort()
        : [...new Set(log.flatMap((x) => x.names).filter((n) => known.has(n)))].sort();
      let result: SqlCommitResult;
      if (writes.length === 0) {
        result = { ...base, tables: touched };
      } else {
        const shadowAfter: Record<string, string> = {};
        for (const t of touched) shadowAfter[t] = await this.dialect.fingerprint(shadow, t);
        result = await this.applyToReal(s, writes, touched, shadowAfter, base);
        await this.fault('commit:applied');
      }
      await this.endSession(s);
      return result;
    });
  }

  /** Undoes an applied commit (the saga's compensation) if nothing changed those tables since; idempotent. */
  async compensate(result: SqlCommitResult): Promise<SqlCompensateResult> {
    return this.exclusive(async () => {
      const id = result.commitId;
      if (id === null || !result.applied) return { commitId: id ?? '', tables: [], recovered: true };
      const real = this.dialect.real;
      try {
        return await real.transaction(async (trx) => {
          await trx.raw(this.dialect.commitsDdl());
          const rows = await this.commitRow(trx, id);
          if (rows === null)
            throw new SqlCompensationError(
              id,
              `it was never applied to ${this.dialect.target}; nothing to undo`,
            );
          if (rows.compensated_at !== null) return { commitId: id, tables: [], recovered: true };
          const stored = JSON.parse(rows.result) as SqlCommitResult;
          if (!stored.undoable)
            throw new SqlCompensationError(
              id,
              'it dropped or altered tables, which cannot be undone from data images',
            );
          const undo = JSON.parse(rows.undo) as Record<string, Encoded | null>;
          const after = JSON.parse(rows.after) as Record<string, string>;
          await this.dialect.lock(trx, Object.keys(after));
          const changed: string[] = [];
          for (const [t, fp] of Object.entries(after))
            if ((await this.dialect.fingerprint(trx, t)) !== fp) changed.push(t);
          if (changed.length > 0) throw new SqlConflictError(changed, 'compensate');
          for (const [t, image] of Object.entries(undo)) {
            if (image === null) await trx.raw(`DROP TABLE IF EXISTS ${quoteIdent(t)}`);
            else await this.dialect.restore(trx, t, image);
          }
          await trx.raw(`UPDATE ${COMMITS} SET compensated_at = ? WHERE id = ?`, [
            new Date().toISOString(),
            id,
          ]);
          return { commitId: id, tables: Object.keys(undo).sort(), recovered: false };
        });
      } catch (err) {
        if (err instanceof SqlCompensationError || err instanceof SqlConflictError) throw err;
        throw new SqlCommitFailedError(err);
      }
    });
  }

  /** Throws the shadow away; the real database never saw any of it. A new snapshot starts on the next query. */
  async discard(): Promise<void> {
    await this.exclusive(async () => {
      const s = this.state.session;
      if (s === null) return;
      const applied = await this.dialect.real.transaction(async (trx) => {
        if ((await this.dialect.fingerprint(trx, COMMITS)) === 'absent') return false;
        return (await this.commitRow(trx, s.id)) !== null;
      });
      if (applied)
        throw new SqlConfigError(
          `session ${s.id} was already committed by an earlier attempt; call commit() to finish it (it returns recovered: true), or compensate() to undo it`,
        );
      await this.endSession(s);
    });
  }

  async close(): Promise<void> {
    await this.exclusive(async () => {
      await this.shadowDb?.destroy();
      this.shadowDb = null;
      await this.dialect.close();
    });
  }

  // ── internals ──────────────────────────────────────────────────────────────────────────────────────────

  private async applyToReal(
    s: Session,
    writes: (StagedStatement & { verb: string })[],
    touched: string[],
    shadowAfter: Record<string, string>,
    base: SqlCommitResult,
  ): Promise<SqlCommitResult> {
    const d = this.dialect;
    try {
      return await d.real.transaction(async (trx) => {
        await trx.raw(d.commitsDdl());
        await d.lock(trx, touched);
        const done = await this.commitRow(trx, s.id);
        if (done !== null) return { ...(JSON.parse(done.result) as SqlCommitResult), recovered: true };
        const conflicts: string[] = [];
        const undo: Record<string, Encoded | null> = {};
        for (const t of touched) {
          const now = await d.fingerprint(trx, t);
          if (now !== (s.base[t] ?? 'absent')) conflicts.push(t);
          undo[t] = now === 'absent' ? null : await d.image(trx, t);
        }
        if (conflicts.length > 0) throw new SqlConflictError(conflicts, 'commit');
        for (const w of writes) {
          try {
            await d.exec(trx, w.statement, decodeBindings(w.params), true);
          } catch (err) {
            throw new SqlReplayDivergedError([], err);
          }
        }
        const after: Record<string, string> = {};
        const diverged: string[] = [];
        for (const t of touched) {
          after[t] = await d.fingerprint(trx, t);
          if (after[t] !== shadowAfter[t]) diverged.push(t);
        }
        if (diverged.length > 0) throw new SqlReplayDivergedError(diverged);
        const undoable = !writes.some(
          (w) => w.verb === 'drop' || w.verb === 'alter' || w.verb === 'truncate',
        );
        const result: SqlCommitResult = {
          ...base,
          applied: true,
          statements: writes.length,
          rowsAffected: writes.reduce((n, x) => n + x.rowsAffected, 0),
          tables: touched,
          undoable,
        };
        // Dropped tables are not in `after`, so compensate never sees them as changed; undoable says so.
        for (const [t, fp] of Object.entries(after)) if (fp === 'absent') delete after[t];
        await trx.raw(`INSERT INTO ${COMMITS} (id, applied_at, result, undo, after) VALUES (?, ?, ?, ?, ?)`, [
          s.id,
          new Date().toISOString(),
          JSON.stringify(result),
          JSON.stringify(undo),
          JSON.stringify(after),
        ]);
        return result;
      });
    } catch (err) {
      if (err instanceof SqlConflictError || err instanceof SqlReplayDivergedError) throw err;
      throw new SqlCommitFailedError(err);
    }
  }

  private async commitRow(
    db: Knex | Knex.Transaction,
    id: string,
  ): Promise<{ result: string; undo: string; after: string; compensated_at: string | null } | null> {
    const r = await db.raw(`SELECT result, undo, after, compensated_at FROM ${COMMITS} WHERE id = ?`, [id]);
    const rows = (Array.isArray(r) ? r : r.rows) as {
      result: string;
      undo: string;
      after: string;
      compensated_at: string | null;
    }[];
    return rows[0] ?? null;
  }

  private async log(s: Session): Promise<(StagedStatement & { names: string[]; verb: string })[]> {
    const r = await this.shadow(s).raw(
      `SELECT seq, kind, statement, params, rows_affected, names, verb FROM ${LOG} ORDER BY seq`,
    );
    const rows = (Array.isArray(r) ? r : r.rows) as Record<string, string | number>[];
    return rows.map((x) => ({
      seq: Number(x.seq),
      kind: x.kind as 'read' | 'write',
      statement: String(x.statement),
      params: JSON.parse(String(x.params)) as Encoded,
      rowsAffected: Number(x.rows_affected),
      names: JSON.parse(String(x.names)) as string[],
      verb: String(x.verb),
    }));
  }

  private shadow(s: Session): Knex {
    if (this.shadowDb === null) this.shadowDb = this.dialect.openShadow(s.shadow);
    return this.shadowDb;
  }

  private async newSession(): Promise<Session> {
    await fs.mkdir(this.stagingDir, { recursive: true, mode: 0o700 });
    const marker = path.join(this.stagingDir, MARKER);
    if ((await lstatOrNull(marker)) === null)
      await fs.writeFile(marker, 'staging area of a Jukebox StagedSql; see docs/shadow-booth.md\n', {
        mode: 0o600,
      });
    const id = randomBytes(8).toString('hex');
    const shadowRef = await this.dialect.createShadow(id, this.stagingDir);
    const shadow = this.dialect.openShadow(shadowRef);
    try {
      const base: Record<string, string> = {};
      for (const t of await this.dialect.listTables(shadow))
        base[t] = await this.dialect.fingerprint(shadow, t);
      const session: Session = {
        id,
        shadow: shadowRef,
        base,
        indirection: await this.dialect.hasIndirection(shadow),
      };
      this.state = { ...this.state, session };
      // The state file is written last: a crash before it leaves an orphan shadow, never a half-known session.
      await atomicWriteJson(path.join(this.stagingDir, STATE_FILE), this.state);
      this.shadowDb = shadow;
      return session;
    } catch (err) {
      await shadow.destroy();
      await this.dialect.dropShadow(shadowRef);
      throw err;
    }
  }

  private async endSession(s: Session): Promise<void> {
    await this.shadowDb?.destroy();
    this.shadowDb = null;
    this.state = { ...this.state, session: null };
    await atomicWriteJson(path.join(this.stagingDir, STATE_FILE), this.state);
    await this.dialect.dropShadow(s.shadow);
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }
}

async function loadState(stagingDir: string, dialect: Dialect): Promise<State> {
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
