/**
 * The SQL part of the Shadow Booth. Statements run against a shadow (a copy of the SQLite file, or a copy of
 * the PostgreSQL schema) taken at open; each statement and its log row commit together on the shadow, so the
 * shadow and the statement log never disagree, even across a crash. commit() replays the logged statements on
 * the real database in one transaction after checking that the rows the run wrote still hold what it started
 * from (tables without a primary key, or changed by DDL, are compared whole), re-runs the run's reads in their
 * place to check they still return what the run saw, checks the replay produced the shadow's rows, and stores an
 * undo image next to an idempotency marker in that same transaction. See docs/shadow-booth.md.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import { currentActivityTape } from '../../recorder/activityTape';
import { atomicWriteJson, lstatOrNull } from '../durable';
import { StagingCorruptError } from '../errors';
import {
  COUNTED_VERBS,
  type CommitPlan,
  parseImages,
  planCommit,
  RECHECKED_READS,
  resultHash,
  rowCount,
  type StoredImages,
} from './commitPlan';
import { type Dialect, quoteIdent, type SequencePosition } from './dialect';
import {
  SqlCommitFailedError,
  SqlCompensationError,
  SqlConfigError,
  SqlConflictError,
  type SqlConflictRow,
  SqlRefusedError,
  SqlReplayDivergedError,
  SqlStatementError,
  SqlStatementTimeoutError,
  SqlTamperedError,
} from './errors';
import { pgDialect } from './pgDialect';
import {
  COMMITS,
  createStepsDdl,
  LOG,
  type LoggedStatement,
  loadState,
  MARKER,
  type Session,
  STATE_FILE,
  STEPS,
  type State,
} from './sessionState';
import { sqliteDialect } from './sqliteDialect';
import { type AnalyzedStatement, analyze, type Client } from './statement';
import { type Bindings, decodeBindings, type Encoded, encodeBindings } from './values';

export interface StagedSqlOptions {
  client: Client;
  /** sqlite3: the database file (`{ filename }` or a path); pg: a knex/pg connection config or URL. */
  connection: string | { filename: string } | Knex.PgConnectionConfig;
  /** Holds the session state (and for SQLite the shadow file); reopening it continues the same staged state. */
  stagingDir: string;
  /** pg only: the schema that is shadowed (default `public`). */
  schema?: string;
  /**
   * A staged statement running longer than this is stopped (`SqlStatementTimeoutError`) and stages nothing:
   * PostgreSQL's statement_timeout on the session role's connection, SQLite's interrupt. Default 30 s; 0: none.
   */
  statementTimeoutMs?: number;
  /**
   * Called at `stage:statement-staged` (after each staged statement) and `commit:applied` (real transaction
   * committed, local state not yet cleared) so tests can crash there.
   */
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
  /** JSON-safe bindings (bytes as `{ $bytes }`, see src/booth/sql/values.ts). */
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

/** Carries a plan's failure out of the commit transaction unchanged. */
class PlanFailed {
  constructor(readonly cause: unknown) {}
}

/** Replayed writes whose rows commit() does not need: plain DML, which does all its changes in one step. */
const COUNT_ONLY_VERBS = new Set(['insert', 'update', 'delete', 'replace']);

/** A session role the server would not let in (pg_hba, password auth) is a setting to fix, not a bad statement. */
function loginRefused(err: unknown): SqlConfigError | null {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('28')) return null;
  return new SqlConfigError(
    `the PostgreSQL server refused the login of the session's own role (${err instanceof Error ? err.message : String(err)}); allow password (or trust) logins for jbx_agent_* roles from this worker in pg_hba.conf (docs/shadow-booth.md, "What PostgreSQL must grant")`,
    err,
  );
}

async function loginChecked<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw loginRefused(err) ?? err;
  }
}

export class StagedSql {
  readonly client: Client;
  readonly stagingDir: string;
  private readonly dialect: Dialect;
  private state: State;
  private shadowDb: Knex | null = null;
  /** Where the agent's statements run (pg: the session's role; SQLite: `shadowDb` itself). */
  private agentDb: Knex | null = null;
  private readonly timeoutMs: number | undefined;
  private schemas: Set<string>;
  private queue: Promise<unknown> = Promise.resolve();
  private fault: (name: string) => void | Promise<void> = () => {};
  /** The tool step this instance stages for, and its open shadow transaction (see enterStep). */
  /** `file`: this attempt saved sequence positions (pg) that completing the step removes. */
  /** `lost`: a statement timeout rolled the step's transaction back; nothing more of this step can be staged. */
  private step: { id: string; trx: Knex.Transaction | null; file: boolean; lost?: Error } | null = null;

  private constructor(
    dialect: Dialect,
    stagingDir: string,
    state: State,
    schemas: Set<string>,
    timeoutMs: number | undefined,
  ) {
    this.timeoutMs = timeoutMs;
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
    const timeoutMs = o.statementTimeoutMs ?? 30_000;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 0)
      throw new SqlConfigError(
        `statementTimeoutMs must be a whole number of milliseconds (0: none), not ${timeoutMs}`,
      );
    try {
      const schemas = await dialect.forbiddenSchemas();
      const state = await loadState(stagingDir, dialect);
      const sql = new StagedSql(dialect, stagingDir, state, schemas, timeoutMs === 0 ? undefined : timeoutMs);
      if (o.faultPoint) sql.fault = o.faultPoint;
      if (state.session !== null) await sql.exclusive(() => sql.settleEnded(state.session!));
      if (sql.state.session === null) await sql.exclusive(() => sql.newSession());
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

  /**
   * Runs one statement on the shadow. Reads see this run's staged writes. Refused statements change nothing:
   * `SqlRefusedError` names what the statement reached for, whether the booth's lexer or the database refused it.
   */
  async query(sql: string, bindings?: Bindings): Promise<SqlQueryResult> {
    return this.exclusive(async () => {
      const a = this.check(sql, bindings);
      const session = this.state.session ?? (await this.newSession());
      const shadow = this.shadow(session);
      const agent = this.agent(session);
      const write = a.kind === 'write';
      let result: SqlQueryResult;
      let seq: number;
      const params = encodeBindings(bindings);
      const step = this.step;
      if (step?.lost) throw step.lost;
      // A step's first statement runs straight in the step's transaction, which a failure rolls back whole:
      // that undoes exactly what a savepoint would (nothing else is in it yet), two round trips fewer.
      const first = step !== null && step.trx === null;
      const db = step !== null ? await loginChecked(this.stepTransaction(agent, shadow)) : agent;
      const sequences = write ? await this.dialect.sequencePositions(shadow) : [];
      const run = async (trx: Knex.Transaction) => {
        const r = await this.dialect.exec(trx, sql, bindings ?? [], write, { timeoutMs: this.timeoutMs });
        const seq = await this.dialect.logStatement(trx, session, {
          kind: a.kind,
          statement: sql,
          params: JSON.stringify(params),
          rowsAffected: r.rowsAffected,
          names: JSON.stringify([...a.names]),
          verb: a.verb,
          result: write ? null : resultHash(r.rows),
        });
        return { result: r, seq };
      };
      try {
        // Otherwise inside a step this nests: a savepoint, so a rejected statement undoes only itself.
        ({ result, seq } = first ? await run(db as Knex.Transaction) : await db.transaction(run));
      } catch (err) {
        let thrown: unknown = err;
        // SQLite rolls a whole transaction back when it interrupts a write in it: the step's earlier statements
        // are gone, so the step can stage nothing more and must fail (its retry stages afresh).
        const lost =
          step !== null &&
          !first &&
          this.client === 'sqlite3' &&
          err instanceof SqlStatementTimeoutError &&
          step.trx !== null;
        if (lost) thrown = new SqlStatementTimeoutError(sql, err.timeoutMs, true, err.cause);
        if ((first || lost) && step.trx !== null) {
          await step.trx.rollback().catch(() => {});
          step.trx = null;
          if (lost) step.lost = thrown as Error;
        }
        // A refused statement stages nothing, not even a sequence step the rollback could not undo.
        await this.dialect.resetSequences(shadow, sequences).catch(() => {});
        if (thrown instanceof SqlRefusedError || thrown instanceof SqlStatementTimeoutError) throw thrown;
        throw loginRefused(err) ?? new SqlStatementError(sql, err);
      }
      await this.fault('stage:statement-staged');
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
   * The booth's rules over the statement as knex will send it: `??` and `:name:` bindings are identifiers
   * spliced into the text, so they are read there, not skipped.
   */
  private check(sql: string, bindings: Bindings | undefined): AnalyzedStatement {
    analyze(sql, this.client, this.schemas);
    let sent: string;
    try {
      sent = this.dialect.real.raw(sql, (bindings ?? []) as never).toSQL().sql;
    } catch (err) {
      throw new SqlStatementError(sql, err);
    }
    // A refusal of the bound text carries that text as its statement: it shows what the bindings made of it.
    return analyze(sent, this.client, this.schemas);
  }

  /**
   * check() of a logged statement at commit. The rules are a function of the text alone, so a text they accepted
   * once in this commit (`passed`) is not read again: a run that inserted 1,000 rows with one statement is one
   * text, bound 1,000 ways.
   */
  private recheck(sql: string, bindings: Bindings, passed: Set<string>): void {
    if (!passed.has(sql)) {
      analyze(sql, this.client, this.schemas);
      passed.add(sql);
    }
    let sent: string;
    try {
      sent = this.dialect.real.raw(sql, bindings as never).toSQL().sql;
    } catch (err) {
      throw new SqlStatementError(sql, err);
    }
    if (passed.has(sent)) return;
    analyze(sent, this.client, this.schemas);
    passed.add(sent);
  }

  /**
   * From now on, this instance's statements belong to tool step `id`: they run in one shadow transaction that
   * commits only in `completeStep`, together with the step's checkpoint row, so a step killed halfway leaves the
   * shadow as it was before the step (the database rolls the open transaction back).
   */
  enterStep(id: string): void {
    this.step = { id, trx: null, file: false };
  }

  /** Why this step can stage nothing more (a statement timeout took its transaction), or null. */
  get stepLost(): Error | null {
    return this.step?.lost ?? null;
  }

  /** True while a step's statements are staged and not yet completed or aborted. */
  get inStep(): boolean {
    return this.step?.trx != null;
  }

  /**
   * Commits the step's statements and its checkpoint row (`_jukebox_steps`: id, attempt, result) in one
   * transaction. Returns false, writing nothing, when the step ran no statement. The commit waits for `ready`
   * (durable work the row depends on), which runs while the row is inserted; if it fails, nothing commits.
   */
  completeStep(attempt: number, result: unknown, ready?: () => Promise<void>): Promise<boolean> {
    return this.exclusive(async () => {
      const step = this.step;
      if (step?.lost) throw step.lost;
      if (step === null || step.trx === null) {
        await ready?.();
        return false;
      }
      const trx = step.trx;
      const session = this.state.session!;
      const insert = () =>
        this.dialect.insertCheckpoint(trx, session, step.id, attempt, JSON.stringify(result));
      const failed = (await Promise.allSettled([insert(), ready?.()])).find((r) => r.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      await trx.commit();
      this.step = null;
      if (step.file) await fs.rm(this.stepFile(step.id), { force: true });
      return true;
    });
  }

  /** The step's checkpoint row, if an attempt of step `id` completed its statements. */
  stepCheckpoint(id: string): Promise<{ attempt: number; result: unknown } | null> {
    return this.exclusive(async () => {
      const s = this.state.session;
      if (s === null) return null;
      const shadow = this.shadow(s);
      const r = await shadow.raw(
        `SELECT attempt, result FROM ${this.dialect.bookkeeping(s, STEPS)} WHERE id = ?`,
        [id],
      );
      const rows = (Array.isArray(r) ? r : r.rows) as { attempt: number | string; result: string }[];
      const row = rows[0];
      return row === undefined ? null : { attempt: Number(row.attempt), result: JSON.parse(row.result) };
    });
  }

  /**
   * Throws away what an attempt of step `id` left that never completed: its transaction died with its process,
   * so only sequences (pg: not transactional) may have moved; they go back to where the step found them.
   */
  discardStep(id: string): Promise<void> {
    return this.exclusive(() => this.discardStepFile(id));
  }

  /** Rolls the step's open transaction back (the tool failed): nothing it ran stays in the shadow. */
  abortStep(): Promise<void> {
    return this.exclusive(async () => {
      const step = this.step;
      this.step = null;
      if (step?.trx == null) return;
      await step.trx.rollback().catch(() => {});
      await this.discardStepFile(step.id);
    });
  }

  private async discardStepFile(id: string): Promise<void> {
    const s = this.state.session;
    try {
      const saved = JSON.parse(await fs.readFile(this.stepFile(id), 'utf8')) as {
        positions: SequencePosition[];
      };
      if (s !== null && saved.positions.length > 0)
        await this.dialect.resetSequences(this.shadow(s), saved.positions);
    } catch {
      // No file: the step never ran a statement.
    }
    await fs.rm(this.stepFile(id), { force: true });
  }

  private stepFile(id: string): string {
    return path.join(
      this.stagingDir,
      `step-${createHash('sha256').update(id).digest('hex').slice(0, 16)}.json`,
    );
  }

  /** The step's transaction, opened on its first statement after saving where the sequences stood. */
  private async stepTransaction(agent: Knex, shadow: Knex): Promise<Knex.Transaction> {
    const step = this.step!;
    if (step.trx !== null) return step.trx;
    const positions = await this.dialect.sequencePositions(shadow);
    // Only pg sequences need putting back after a killed attempt; not fsynced (a retry follows a crash of the
    // worker, not of the database server).
    if (positions.length > 0) {
      await atomicWriteJson(this.stepFile(step.id), { positions }, false);
      step.file = true;
    }
    step.trx = await agent.transaction();
    return step.trx;
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
      const last = this.state.lastCommit;
      if (s === null) return last?.applied ? { ...last, recovered: true } : base;
      const log = await this.log(s);
      // A retry after a crash that came after the last commit's session ended (its caller never saw the result)
      // finds a fresh, untouched session: the commit happened, and whoever compensates needs to hear so.
      if (log.length === 0 && last?.applied) return { ...last, recovered: true };
      // Planned on the shadow's connection while the statements are checked and the real transaction opens.
      const planned = planCommit(this.dialect, this.shadow(s), s, log);
      planned.catch(() => {});
      // Every logged statement again, against the same rules that staged it, before the real database sees one.
      const passed = new Set<string>();
      for (const x of log) {
        try {
          this.recheck(x.statement, decodeBindings(x.params), passed);
        } catch (err) {
          if (err instanceof SqlRefusedError) throw new SqlTamperedError(x.seq, err);
          throw err;
        }
      }
      const writes = log.filter((x) => x.kind === 'write');
      let result: SqlCommitResult;
      if (writes.length === 0) {
        const plan = await planned;
        result = { ...base, tables: plan.touched };
      } else {
        result = await this.applyToReal(s, log, planned, base);
        await this.fault('commit:applied');
      }
      await this.endSession(s, result.applied ? result : undefined);
      return result;
    });
  }

  /**
   * Undoes whatever this staging dir's last commit applied, without the caller holding its result: the saga's
   * compensation for a SQL part that failed after the real transaction committed (every attempt cut short before
   * it could report back). Finds the commit through the session still open (its id is in the real database's
   * commit table) or the one that ended; returns null when nothing was applied, which leaves discard() to end the
   * session. Idempotent, like compensate().
   */
  async compensateApplied(): Promise<SqlCompensateResult | null> {
    const applied = await this.exclusive(async () => {
      const s = this.state.session;
      const last = this.state.lastCommit?.applied ? this.state.lastCommit : null;
      if (s === null) return last;
      const own = await this.appliedCommit(s);
      if (own !== null) return own;
      // Only an untouched session stands for "the last commit, retried"; one with statements is new work.
      return (await this.log(s)).length === 0 ? last : null;
    });
    if (applied === null) return null;
    const out = await this.compensate(applied);
    await this.exclusive(async () => {
      // The session whose commit was just undone is over; a later discard() has nothing left to refuse.
      const s = this.state.session;
      if (s !== null && s.id === applied.commitId) await this.endSession(s);
    });
    return out;
  }

  /** Undoes an applied commit (the saga's compensation) if nothing changed those tables since; idempotent. */
  async compensate(result: SqlCommitResult): Promise<SqlCompensateResult> {
    return this.exclusive(async () => {
      const id = result.commitId;
      if (id === null || !result.applied) return { commitId: id ?? '', tables: [], recovered: true };
      try {
        return await this.dialect.writeTransaction(async (trx) => {
          // First, as in applyToReal: SQLite's lock needs no table names; pg's follows once the row names them.
          await this.dialect.lock(trx, []);
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
          const undo = parseImages(rows.undo);
          const after = parseImages(rows.after);
          const d = this.dialect;
          const tables = [
            ...new Set([
              ...Object.keys(undo.tables),
              ...Object.keys(after.tables),
              ...Object.keys(after.rows),
            ]),
          ].sort();
          await d.lock(trx, tables);
          const changed: string[] = [];
          for (const [t, fp] of Object.entries(after.tables))
            if ((await d.fingerprint(trx, t)) !== fp) changed.push(t);
          const changedRows: SqlConflictRow[] = [];
          for (const [t, written] of Object.entries(after.rows)) {
            const now = await d.rowImages(
              trx,
              t,
              written.map((w) => w.key),
            );
            written.forEach((w, i) => {
              if (now[i] !== w.image) changedRows.push({ table: t, key: d.describeKey(w.key) });
            });
          }
          if (changed.length > 0 || changedRows.length > 0)
            throw new SqlConflictError(
              [...new Set([...changed, ...changedRows.map((r) => r.table)])].sort(),
              'compensate',
              { rows: changedRows, wholeTables: changed },
            );
          for (const [t, image] of Object.entries(undo.tables)) {
            if (image === null) await trx.raw(`DROP TABLE IF EXISTS ${quoteIdent(t)}`);
            else await d.restore(trx, t, image);
          }
          for (const [t, written] of Object.entries(undo.rows)) await d.restoreRows(trx, t, written);
          await trx.raw(`UPDATE ${COMMITS} SET compensated_at = ? WHERE id = ?`, [
            new Date().toISOString(),
            id,
          ]);
          return {
            commitId: id,
            tables: [...new Set([...Object.keys(undo.tables), ...Object.keys(undo.rows)])].sort(),
            recovered: false,
          };
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
      if ((await this.appliedCommit(s)) !== null)
        throw new SqlConfigError(
          `session ${s.id} was already committed by an earlier attempt; call commit() to finish it (it returns recovered: true), or compensate() to undo it`,
        );
      await this.endSession(s);
    });
  }

  async close(): Promise<void> {
    if (this.step?.trx) await this.abortStep();
    await this.exclusive(async () => {
      await this.closeShadow();
      await this.dialect.close();
    });
  }

  // ── internals ──────────────────────────────────────────────────────────────────────────────────────────

  private async applyToReal(
    s: Session,
    log: LoggedStatement[],
    planned: Promise<CommitPlan>,
    base: SqlCommitResult,
  ): Promise<SqlCommitResult> {
    const d = this.dialect;
    const writes = log.filter((x) => x.kind === 'write');
    // Statement texts this transaction's replay has checked (see ExecOptions.checked).
    const checked = new Set<string>();
    try {
      return await d.writeTransaction(async (trx) => {
        // The lock comes first: SQLite waits out another writer (busy_timeout) only for a transaction's first
        // lock; one that read first and then asks for the write lock while another commit holds it fails at once
        // with SQLITE_BUSY. The booth's commit table is in place already (writeTransaction). SQLite's lock names
        // no table, so it and the look for an earlier commit run while the plan is still being read from the
        // shadow; pg's lock waits for the plan's table names.
        const early = !d.locksTables;
        const lockAndFind = async (tables: string[]) => {
          await d.lock(trx, tables);
          return this.commitRow(trx, s.id);
        };
        let done = early ? await lockAndFind([]) : null;
        if (done !== null) return { ...(JSON.parse(done.result) as SqlCommitResult), recovered: true };
        // Waiting for the plan runs no statement in this transaction.
        const plan = await planned.catch((err: unknown) => Promise.reject(new PlanFailed(err)));
        const known = new Set([...Object.keys(s.base), ...plan.touched]);
        if (!early) done = await lockAndFind(plan.touched);
        if (done !== null) return { ...(JSON.parse(done.result) as SqlCommitResult), recovered: true };
        const conflicts: string[] = [];
        const conflictRows: SqlConflictRow[] = [];
        const undo: StoredImages = { format: 2, tables: {}, rows: {} };
        for (const t of plan.whole) {
          const now = await d.fingerprint(trx, t);
          if (now !== (s.base[t] ?? 'absent')) conflicts.push(t);
          undo.tables[t] = now === 'absent' ? null : await d.image(trx, t);
        }
        for (const [t, keyed] of plan.rows) {
          const now = await d.rowImages(
            trx,
            t,
            keyed.map((r) => r.key),
          );
          keyed.forEach((r, i) => {
            if (now[i] !== r.pre) conflictRows.push({ table: t, key: d.describeKey(r.key) });
          });
          undo.rows[t] = keyed.map((r) => ({ key: r.key, image: r.pre }));
        }
        if (conflicts.length > 0 || conflictRows.length > 0)
          throw new SqlConflictError(
            [...new Set([...conflicts, ...conflictRows.map((r) => r.table)])].sort(),
            'commit',
            { rows: conflictRows, wholeTables: conflicts },
          );
        for (const x of log) {
          const tables = x.names.filter((n) => known.has(n)).sort();
          if (x.kind === 'read') {
            // A read naming no table (SELECT 1) cannot conflict; with triggers or views every table is compared
            // whole; EXPLAIN/PRAGMA/SHOW describe the database, not rows (a plan may differ on the real one).
            if (tables.length === 0 || s.indirection || x.result === null || !RECHECKED_READS.has(x.verb))
              continue;
            let seen: string;
            try {
              seen = resultHash(
                (await d.exec(trx, x.statement, decodeBindings(x.params), false, { checked })).rows,
              );
            } catch (err) {
              throw new SqlConflictError(tables, 'commit', {
                statement: x.statement,
                statementDetail: `fails (${err instanceof Error ? err.message : String(err)})`,
              });
            }
            if (seen !== x.result)
              throw new SqlConflictError(tables, 'commit', {
                statement: x.statement,
                statementDetail: 'now returns other rows than the run read',
              });
            continue;
          }
          let affected: number;
          try {
            affected = (
              await d.exec(trx, x.statement, decodeBindings(x.params), true, {
                checked,
                countOnly: COUNT_ONLY_VERBS.has(x.verb),
              })
            ).rowsAffected;
          } catch (err) {
            throw new SqlReplayDivergedError([], err);
          }
          // The rows it wrote were unchanged (checked above), so a different count means rows its WHERE reads.
          if (!s.indirection && COUNTED_VERBS.has(x.verb) && affected !== x.rowsAffected)
            throw new SqlConflictError(tables, 'commit', {
              statement: x.statement,
              statementDetail: `would change ${affected} row(s), not the ${x.rowsAffected} it changed on the run's snapshot,`,
            });
        }
        const after: StoredImages = { format: 2, tables: {}, rows: {} };
        const diverged: string[] = [];
        for (const t of plan.whole) {
          const fp = await d.fingerprint(trx, t);
          if (fp !== plan.shadowAfter[t]) diverged.push(t);
          // Dropped tables are not in `after`, so compensate never sees them as changed; undoable says so.
          if (fp !== 'absent') after.tables[t] = fp;
        }
        for (const [t, keyed] of plan.rows) {
          const now = await d.rowImages(
            trx,
            t,
            keyed.map((r) => r.key),
          );
          if (keyed.some((r, i) => now[i] !== r.shadow)) diverged.push(t);
          after.rows[t] = keyed.map((r) => ({ key: r.key, image: r.shadow }));
        }
        if (diverged.length > 0) throw new SqlReplayDivergedError(diverged.sort());
        const undoable = !writes.some(
          (w) => w.verb === 'drop' || w.verb === 'alter' || w.verb === 'truncate',
        );
        const result: SqlCommitResult = {
          ...base,
          applied: true,
          statements: writes.length,
          rowsAffected: writes.reduce((n, x) => n + x.rowsAffected, 0),
          tables: plan.touched,
          undoable,
        };
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
      // A plan that could not be read fails the commit as it did before the real database was asked.
      if (err instanceof PlanFailed) throw err.cause;
      if (err instanceof SqlConflictError || err instanceof SqlReplayDivergedError) throw err;
      throw new SqlCommitFailedError(err);
    }
  }

  /** What the real database holds of this session's commit: its result, or null when it never applied. */
  private async appliedCommit(s: Session): Promise<SqlCommitResult | null> {
    const real = this.dialect.real;
    if (!(await this.dialect.hasTable(real, COMMITS))) return null;
    const row = await this.commitRow(real, s.id);
    return row === null ? null : (JSON.parse(row.result) as SqlCommitResult);
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

  private async log(s: Session): Promise<LoggedStatement[]> {
    const r = await this.shadow(s).raw(
      `SELECT seq, kind, statement, params, rows_affected, names, verb, result FROM ${this.dialect.bookkeeping(s, LOG)} ORDER BY seq`,
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
      result: x.result === null || x.result === undefined ? null : String(x.result),
    }));
  }

  private shadow(s: Session): Knex {
    if (this.shadowDb === null) this.shadowDb = this.dialect.openShadow(s);
    return this.shadowDb;
  }

  private agent(s: Session): Knex {
    if (this.agentDb === null)
      this.agentDb = this.dialect.openAgent(s, this.shadow(s), { timeoutMs: this.timeoutMs });
    return this.agentDb;
  }

  private async closeShadow(): Promise<void> {
    if (this.agentDb !== null && this.agentDb !== this.shadowDb) await this.agentDb.destroy();
    this.agentDb = null;
    await this.shadowDb?.destroy();
    this.shadowDb = null;
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
      // Made once with the shadow, not in every step's checkpoint commit (pg: with its bookkeeping schema).
      if (this.client === 'sqlite3') await shadow.raw(createStepsDdl(this.client));
      const session: Session = {
        id,
        shadow: shadowRef.shadow,
        ...(shadowRef.agent ? { agent: shadowRef.agent } : {}),
        base,
        // The real database too: a pg trigger the shadow could not safely copy still fires on replay.
        indirection:
          (await this.dialect.hasIndirection(shadow)) ||
          (await this.dialect.hasIndirection(this.dialect.real)),
        steps: true,
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

  /**
   * After an applied commit the state file is not rewritten: its row in the real database's commit table (made
   * durable by the commit itself) records the end, and open() reads it there once the shadow is gone (see
   * settleEnded). The next session's state write carries `lastCommit`. That saves a commit an fsynced write.
   * Any other end (discard, compensation, a commit that applied nothing) has no such row and writes the state.
   */
  private async endSession(s: Session, committed?: SqlCommitResult): Promise<void> {
    await this.closeShadow();
    this.state = { ...this.state, session: null, ...(committed ? { lastCommit: committed } : {}) };
    if (committed === undefined) await atomicWriteJson(path.join(this.stagingDir, STATE_FILE), this.state);
    await this.dialect.dropShadow(s);
  }

  /**
   * At open: a session the state file names whose shadow is gone, with its commit in the real database, ended
   * with that commit (endSession dropped the shadow without rewriting the state). A shadow missing with no
   * commit is left to fail where it is used, as before: nothing here can tell what it staged.
   */
  private async settleEnded(s: Session): Promise<void> {
    if (await this.dialect.shadowExists(s)) return;
    const applied = await this.appliedCommit(s);
    if (applied !== null) this.state = { ...this.state, session: null, lastCommit: applied };
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }
}
