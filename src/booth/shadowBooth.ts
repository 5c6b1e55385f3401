/**
 * One run's Shadow Booth: staged files, the staged database, escrowed MCP calls, all on disk under
 * `<stagingRoot>/<workflowId>/<runId>/`, so any worker process (a restart, a Temporal retry elsewhere) opens the
 * same staged state. Tools reach it through their invocation; the commit activities apply it part by part and
 * compensate applied parts when a later one fails (docs/shadow-booth.md).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { crossRealmError, JukeboxError } from '../errors';
import { currentActivityTape } from '../recorder/activityTape';
import type { FaultHook } from './commit';
import { atomicWrite, atomicWriteJson, isCode, lstatOrNull, sha256 } from './durable';
import { type Base, LAYER_FORMAT } from './manifest';
import { McpConnections, type McpServerConfig } from './mcp/connections';
import { McpEscrow, type SentCall } from './mcp/escrow';
import {
  ShellEnvironment,
  type ShellResult,
  type ShellRunOptions,
  type ShellStatus,
  StagedShell,
  type StagedShellOptions,
} from './shell';
import { type SqlCommitResult, type SqlCompensateResult, StagedSql, type StagedSqlOptions } from './sql';
import {
  type Change,
  type CommitResult,
  DEFAULT_MAX_STAGED_BYTES,
  StagedWorkspace,
  type StagedWorkspaceOptions,
  type WorkspaceStat,
} from './stagedWorkspace';
import {
  ATTEMPTS_DIR,
  type BoothStep,
  CHECKPOINT_FORMAT,
  claimAttempt,
  MAX_ROW_BLOB_BYTES,
  markAttempt,
  releaseAttempt,
  type StepCheckpoint,
  type StepStaging,
} from './stepCheckpoint';
import type { BoothChangeSet, Gate } from './verifiers';

export interface ShadowBoothConfig {
  /** The real directory the agent's files live in. */
  workspaceRoot: string;
  /** Where runs stage; default `.jukebox/staging` under the working directory. */
  stagingRoot?: string;
  /** A SQLite file to stage writes against (shorthand for `sql: { client: 'sqlite3', connection: { filename } }`). */
  sqlite?: string;
  /** `statementTimeoutMs`: a staged statement running longer is stopped (default 30 s; docs/shadow-booth.md). */
  sql?: Pick<StagedSqlOptions, 'client' | 'connection' | 'statementTimeoutMs'>;
  mcpServers?: McpServerConfig[];
  /** Staged files: setuid/setgid/sticky bits (stripped unless allowed) and the run's staged bytes (256 MiB). */
  files?: Pick<StagedWorkspaceOptions, 'allowSpecialModes' | 'maxStagedBytes'>;
  /** Shell commands in the booth (`booth.shell.run`); bubblewrap isolation by default. */
  shell?: StagedShellOptions;
  /** Verifiers and policy gates by name; `ctx.commit({ gates })` names the ones to run. */
  gates?: Record<string, Gate>;
  /**
   * Called at every named crash point of staging and commit (`files:...`, `sql:...`, `mcp:...`, `finish:...`),
   * so fault tests can kill the worker there. A no-op in production.
   */
  faultPoint?: FaultHook;
}

/** A tool tried to use a part of the booth this worker was not configured with. */
export class BoothNotConfiguredError extends JukeboxError {
  constructor(part: string) {
    super(
      'BOOTH_NOT_CONFIGURED',
      `this worker's Shadow Booth has no ${part}; configure it in createJukeboxWorker({ booth: { workspaceRoot, sqlite?, mcpServers?, gates? } })`,
      { nonRetryable: true },
    );
  }
}
crossRealmError('BoothNotConfiguredError', BoothNotConfiguredError);

/** What a worker's booth found at start-up: how shell commands are isolated and limited here, what was swept. */
export interface BoothStatus {
  shell: ShellStatus;
  files: { allowSpecialModes: boolean; maxStagedBytes: number };
  /** Scratch folders and control groups of commands whose worker died, removed (their processes killed). */
  swept: { scratch: string[]; groups: string[] };
}

/** Worker-wide: the configuration and the MCP connections, shared by the booths of every run. */
export class BoothRuntime {
  readonly config: ShadowBoothConfig;
  readonly stagingRoot: string;
  readonly mcp: McpConnections;
  readonly gates: Readonly<Record<string, Gate>>;
  readonly faultPoint: FaultHook;
  private started: Promise<BoothStatus> | undefined;

  constructor(config: ShadowBoothConfig) {
    this.config = config;
    this.stagingRoot = path.resolve(config.stagingRoot ?? '.jukebox/staging');
    this.mcp = new McpConnections(config.mcpServers ?? []);
    this.gates = config.gates ?? {};
    this.faultPoint = config.faultPoint ?? (() => {});
  }

  /**
   * A worker's start-up (createJukeboxWorker calls it; idempotent): removes what shell commands of dead workers
   * left behind, killing any of their processes still alive, and reports how commands run on this machine.
   */
  start(): Promise<BoothStatus> {
    this.started ??= (async () => {
      const shell = new ShellEnvironment(this.config.shell);
      const swept = await shell.sweep();
      return {
        shell: await shell.status(),
        files: {
          allowSpecialModes: this.config.files?.allowSpecialModes === true,
          maxStagedBytes: this.config.files?.maxStagedBytes ?? DEFAULT_MAX_STAGED_BYTES,
        },
        swept,
      };
    })();
    return this.started;
  }

  get sqlOptions(): Pick<StagedSqlOptions, 'client' | 'connection' | 'statementTimeoutMs'> | null {
    if (this.config.sql) return this.config.sql;
    if (this.config.sqlite) return { client: 'sqlite3', connection: { filename: this.config.sqlite } };
    return null;
  }

  /**
   * What the booth owns that may lie inside the workspace root: the staging root of every run, and the SQLite
   * database SQL is staged against with its journals. A run's file API and shell commands cannot reach them.
   */
  get boothOwned(): string[] {
    const sql = this.sqlOptions;
    const c = sql?.client === 'sqlite3' ? sql.connection : undefined;
    const file = typeof c === 'string' ? c : (c as { filename?: unknown } | undefined)?.filename;
    const db = typeof file === 'string' && file !== ':memory:' ? [path.resolve(file)] : [];
    return [this.stagingRoot, ...db.flatMap((f) => [f, `${f}-journal`, `${f}-wal`, `${f}-shm`])];
  }

  /** The folder a run stages in. Ids are escaped so none can climb out of the staging root. */
  runDir(workflowId: string, runId: string): string {
    return path.join(this.stagingRoot, folderName(workflowId), folderName(runId));
  }

  /**
   * The runs with staging on this host (a folder under the staging root), whatever state they are in: what the
   * workers' sweeper checks against the server for runs that ended without settling it.
   */
  async stagedRuns(): Promise<{ workflowId: string; runId: string }[]> {
    const folders = async (dir: string) =>
      (await fs.readdir(dir, { withFileTypes: true }).catch(() => [])).filter((d) => d.isDirectory());
    const out: { workflowId: string; runId: string }[] = [];
    for (const w of await folders(this.stagingRoot))
      for (const r of await folders(path.join(this.stagingRoot, w.name))) {
        const workflowId = idOfFolder(w.name);
        const runId = idOfFolder(r.name);
        if (workflowId !== undefined && runId !== undefined) out.push({ workflowId, runId });
      }
    return out;
  }

  /** Opens a run's booth from disk; cheap (no copy), so each activity opens its own. */
  open(workflowId: string, runId: string): Promise<ShadowBooth> {
    return ShadowBooth.open(this, this.runDir(workflowId, runId));
  }

  /**
   * Opens a run's booth for one tool step (src/booth/stepCheckpoint.ts). `reused` is the checkpoint of an earlier
   * attempt that completed the step: return its result and run nothing. Otherwise whatever an earlier attempt
   * left half-staged is gone, and the booth stages this attempt's effects in the step's own pending area.
   */
  openStep(
    workflowId: string,
    runId: string,
    step: BoothStep,
    /** The step's own: the booth's shell commands stop when it fires (a cancelled or timed-out step). */
    signal?: AbortSignal,
  ): Promise<{ booth: ShadowBooth; reused: StepCheckpoint | null; staging: StepStaging }> {
    return ShadowBooth.openStep(this, this.runDir(workflowId, runId), step, signal);
  }

  close(): Promise<void> {
    return this.mcp.close();
  }
}

/**
 * The fault-injection hook of the fault tests: SIGKILLs this process at the crash point named by
 * `JUKEBOX_BOOTH_CRASH_AT` (e.g. `files:commit:journal-written`), like a machine losing power there.
 */
export function crashAtFromEnv(env: NodeJS.ProcessEnv = process.env): FaultHook {
  const target = env.JUKEBOX_BOOTH_CRASH_AT;
  return (point) => {
    if (target !== undefined && point === target) process.kill(process.pid, 'SIGKILL');
  };
}

/** A tool step's pending area inside its run's folder (not durable: a retry throws it away). */
function stepDirOf(runDir: string, stepId: string): string {
  return path.join(runDir, 'steps', folderName(stepId));
}

function attemptMarkerOf(runDir: string, stepId: string): string {
  return path.join(runDir, ATTEMPTS_DIR, folderName(stepId));
}

function folderName(id: string): string {
  const escaped = encodeURIComponent(id).replace(/\*/g, '%2A');
  return escaped.replace(/^\.+/, (dots) => '%2E'.repeat(dots.length)) || '%00';
}

/** The id a run folder's name stands for; undefined for a folder folderName never makes. */
function idOfFolder(name: string): string | undefined {
  if (name === '%00') return '';
  try {
    const id = decodeURIComponent(name);
    return folderName(id) === name ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The staged workspace as tools see it: each write is also recorded as an fs.mutation frame with its content. */
export class BoothFiles {
  constructor(readonly workspace: StagedWorkspace) {}

  readFile(p: string): Promise<Buffer>;
  readFile(p: string, encoding: BufferEncoding): Promise<string>;
  readFile(p: string, encoding?: BufferEncoding): Promise<Buffer | string> {
    return encoding === undefined ? this.workspace.readFile(p) : this.workspace.readFile(p, encoding);
  }
  stat(p: string): Promise<WorkspaceStat> {
    return this.workspace.stat(p);
  }
  exists(p: string): Promise<boolean> {
    return this.workspace.exists(p);
  }
  readdir(p: string): Promise<string[]> {
    return this.workspace.readdir(p);
  }
  changes(): Promise<Change[]> {
    return this.workspace.changes();
  }

  async writeFile(p: string, data: Uint8Array | string, opts: { mode?: number } = {}): Promise<void> {
    await this.workspace.writeFile(p, data, opts);
    await this.recordContent('write', p);
  }
  async appendFile(p: string, data: Uint8Array | string): Promise<void> {
    await this.workspace.appendFile(p, data);
    await this.recordContent('append', p);
  }
  async mkdir(p: string, opts: { recursive?: boolean; mode?: number } = {}): Promise<void> {
    await this.workspace.mkdir(p, opts);
    this.record({ op: 'mkdir', path: p, ...opts });
  }
  async rm(p: string, opts: { recursive?: boolean; force?: boolean } = {}): Promise<void> {
    await this.workspace.rm(p, opts);
    this.record({ op: 'rm', path: p, ...opts });
  }
  async rename(from: string, to: string): Promise<void> {
    await this.workspace.rename(from, to);
    this.record({ op: 'rename', from, path: to });
  }
  async chmod(p: string, mode: number): Promise<void> {
    await this.workspace.chmod(p, mode);
    this.record({ op: 'chmod', path: p, mode });
  }

  /** Recorded for a change another part (the shell) staged straight into the workspace. */
  async recordChange(change: { op: string; path: string; mode?: number }): Promise<void> {
    if (change.op === 'write') await this.recordContent('write', change.path);
    else this.record({ ...change });
  }

  private record(payload: Record<string, unknown>): void {
    currentActivityTape()?.effect('fs.mutation', () => payload);
  }

  /** `after` carries the whole new content, so a fork can restore the staged file by replaying frames. */
  private async recordContent(op: string, p: string): Promise<void> {
    const tape = currentActivityTape();
    if (!tape) return;
    const bytes = await this.workspace.readFile(p);
    const { mode } = await this.workspace.stat(p);
    tape.effect('fs.mutation', async (s) => ({
      op,
      path: p,
      mode,
      after: await s.putValue(bytes, tape.step),
    }));
  }
}

/** What the files commit replaced, saved before the first real byte moves so compensation can put it back. */
type UndoItem =
  | { path: string; before: { type: 'none' } }
  | { path: string; before: { type: 'file'; hash: string; mode: number } }
  | { path: string; before: { type: 'dir'; mode: number } };

interface UndoPlan {
  format: 'jukebox-files-undo/1';
  items: UndoItem[];
  compensated: boolean;
}

export interface FilesCommitReport extends CommitResult {
  changes: Array<Pick<Change, 'path' | 'op' | 'summary'>>;
}

export class ShadowBooth {
  readonly dir: string;
  /** Stable for the run and safe in names (its folder name): tools use it to make ids idempotent per run. */
  readonly runKey: string;
  readonly files: BoothFiles;
  readonly mcp: McpEscrow;
  /** The tool step this booth stages for, or null (commit, rollback, fork restore outside a step). */
  readonly step: BoothStep | null;
  private sqlPart: StagedSql | null = null;

  /** The signal of the step this booth stages for, if it was given one: its shell commands stop when it fires. */
  private stepSignal: AbortSignal | undefined;

  private constructor(
    private readonly runtime: BoothRuntime,
    dir: string,
    workspace: StagedWorkspace,
    step: BoothStep | null,
  ) {
    this.dir = dir;
    this.runKey = path.basename(dir);
    this.step = step;
    this.files = new BoothFiles(workspace);
    const fault = runtime.faultPoint;
    this.mcp = new McpEscrow(
      runtime.mcp,
      path.join(dir, 'mcp'),
      fault,
      step ? { dir: stepDirOf(dir, step.id), id: step.id } : undefined,
      // Beside the run's folder: what a commit already sent outlives the discarded staging.
      path.join(path.dirname(dir), `${path.basename(dir)}.mcp-sent.json`),
    );
  }

  static async open(runtime: BoothRuntime, dir: string, step?: BoothStep): Promise<ShadowBooth> {
    const fault = runtime.faultPoint;
    const workspace = await StagedWorkspace.open({
      ...runtime.config.files,
      root: runtime.config.workspaceRoot,
      stagingDir: path.join(dir, 'files'),
      boothOwned: runtime.boothOwned,
      faultPoint: (point) => fault(`files:${point}`),
      ...(step ? { layerDir: path.join(stepDirOf(dir, step.id), 'files') } : {}),
    });
    return new ShadowBooth(runtime, dir, workspace, step ?? null);
  }

  static async openStep(
    runtime: BoothRuntime,
    dir: string,
    step: BoothStep,
    signal?: AbortSignal,
  ): Promise<{ booth: ShadowBooth; reused: StepCheckpoint | null; staging: StepStaging }> {
    const stepDir = stepDirOf(dir, step.id);
    const booth = await ShadowBooth.open(runtime, dir, step);
    booth.stepSignal = signal;
    const record = booth.files.workspace.stepRecord(step.id);
    let reused: StepCheckpoint | null =
      record === null
        ? null
        : {
            format: CHECKPOINT_FORMAT,
            step: step.id,
            attempt: record.attempt,
            result: record.result,
            files: null,
            mcp: null,
          };
    const marker = attemptMarkerOf(dir, step.id);
    // A step's first attempt finds no marker and marks itself in the same syscall.
    const before = reused === null ? claimAttempt(marker, step.attempt) : null;
    // Only a retry can find a step whose statements committed on the shadow with the checkpoint row but whose
    // manifest checkpoint was not written yet (killed in between): the row, which holds it all, counts.
    if (
      before !== null &&
      runtime.sqlOptions !== null &&
      (await lstatOrNull(path.join(dir, 'sql'))) !== null
    ) {
      const sql = await StagedSql.open({ ...runtime.sqlOptions!, stagingDir: path.join(dir, 'sql') });
      try {
        const row = await sql.stepCheckpoint(step.id);
        if (row !== null) reused = row.result as StepCheckpoint;
        else await sql.discardStep(step.id);
      } finally {
        await sql.close();
      }
    }
    if (reused !== null) {
      // Idempotent: a step checkpointed in SQL whose merge was cut short is finished here.
      await booth.mergeStep(reused);
      return { booth, reused, staging: { attempt: reused.attempt, reused: true } };
    }
    if (before !== null) {
      // A partial staging: thrown away whole before this attempt stages anything (its layer died with it).
      await fs.rm(stepDir, { recursive: true, force: true });
      await booth.mcp.dropStep(step.id);
      markAttempt(marker, step.attempt);
    }
    await runtime.faultPoint('step:begun');
    const staging: StepStaging = { attempt: step.attempt, reused: false };
    if (before !== null) staging.discarded = before;
    return { booth, reused: null, staging };
  }

  /**
   * The step's checkpoint: its staging (files layer, SQL statements, escrowed MCP calls) becomes the run's
   * together with `result`. With SQL, the shadow transaction holding the step's statements commits with the
   * checkpoint row (the whole checkpoint) first; the escrowed calls join the escrow; then one record appended
   * to the run's step log and fdatasynced merges the files layer and records the step, its attempt and its
   * result: the checkpoint (src/booth/layerMerge.ts). A retry before that append takes the calls back and stages
   * afresh (unless the SQL row exists); one after it reuses the result.
   * A step that staged nothing writes nothing. Returns whether a checkpoint was written. `flushTape: false` is
   * for staging that records no frames of its own (a fork's restore, before the fork's tape has its header).
   */
  async completeStep(result: unknown, options: { flushTape?: boolean } = {}): Promise<boolean> {
    const step = this.step;
    if (step === null) return false;
    // Its SQL transaction is gone: checkpointing the rest would count a step with statements missing.
    const lost = this.sqlPart?.stepLost;
    if (lost) throw lost;
    const files = this.files.workspace.layerDelta();
    const mcp = await this.mcp.pending();
    const sql = this.sqlPart?.inStep ?? false;
    if (files === null && mcp === null && !sql) return false;
    // The step's effect frames reach the tape before its staging counts, so a fork can always rebuild it.
    if (options.flushTape !== false) await currentActivityTape()?.flushEffects('the step staging');
    await this.runtime.faultPoint('step:staged');
    const cp: StepCheckpoint = {
      format: CHECKPOINT_FORMAT,
      step: step.id,
      attempt: step.attempt,
      result,
      files,
      mcp,
    };
    const ws = this.files.workspace;
    const carried = sql ? ws.checkpointBlobs(MAX_ROW_BLOB_BYTES) : null;
    if (carried !== null && carried.size > 0)
      cp.blobs = Object.fromEntries([...carried].map(([h, b]) => [h, b.toString('base64')]));
    // The SQL row holds the files layer too: with the blobs' bytes, or, past a row's inline limit (a large row
    // costs the SQL commit more than a directory fsync), after their names are durable (a directory fsync the
    // row's insert runs alongside).
    const blobs = sql && carried === null ? ws.syncBlobs() : null;
    blobs?.catch(() => {});
    const before = async (): Promise<void> => {
      if (sql) {
        await this.sqlPart!.completeStep(step.attempt, cp, blobs ? () => blobs : undefined);
        await this.runtime.faultPoint('step:sql-checkpointed');
      }
      await this.mcp.mergePending(cp.step, cp.mcp);
    };
    await ws.mergeOwnLayer(
      cp.step,
      { attempt: cp.attempt, result: cp.result },
      sql || mcp !== null ? { before } : {},
    );
    // Only escrowed calls make the pending folder.
    if (mcp !== null) await fs.rm(stepDirOf(this.dir, step.id), { recursive: true, force: true });
    releaseAttempt(attemptMarkerOf(this.dir, step.id));
    await this.runtime.faultPoint('step:checkpointed');
    return true;
  }

  /**
   * Throws away what this step staged and lets it go without a checkpoint: a call in it waits for a person, so
   * the step runs again (as a new step activity) once they decide. Its SQL was rolled back when it closed.
   */
  async abandonStep(): Promise<void> {
    const step = this.step;
    if (step === null) return;
    await this.sqlPart?.abortStep();
    await fs.rm(stepDirOf(this.dir, step.id), { recursive: true, force: true });
    releaseAttempt(attemptMarkerOf(this.dir, step.id));
  }

  /** The calls into the escrow (fsynced), then the step-log append that is the checkpoint; each joins once. */
  private async mergeStep(cp: StepCheckpoint): Promise<void> {
    await this.mcp.mergePending(cp.step, cp.mcp);
    await StagedWorkspace.mergeLayer({
      root: this.runtime.config.workspaceRoot,
      stagingDir: path.join(this.dir, 'files'),
      layer: cp.files ?? { format: LAYER_FORMAT, root: this.files.workspace.root, set: {}, removed: [] },
      step: cp.step,
      record: { attempt: cp.attempt, result: cp.result },
      blobs: new Map(Object.entries(cp.blobs ?? {}).map(([h, b64]) => [h, Buffer.from(b64, 'base64')])),
      faultPoint: (point) => this.runtime.faultPoint(`files:${point}`),
    });
  }

  /**
   * Runs a command against the merged view (src/booth/shell/); what it changes is staged in the workspace and
   * recorded like any other booth write, next to the command's own shell.exec frame.
   */
  readonly shell = {
    run: async (command: string | string[], options: ShellRunOptions): Promise<ShellResult> => {
      // The step's signal stops the command too (a cancelled run, a step past its timeout), with the caller's.
      const signals = [options.signal, this.stepSignal].filter((s): s is AbortSignal => s !== undefined);
      const result = await new StagedShell(this.files.workspace, this.runtime.config.shell).run(command, {
        ...options,
        ...(signals.length ? { signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) } : {}),
      });
      for (const change of result.changes) await this.files.recordChange(change);
      if (result.changes.length > 0) await this.runtime.faultPoint('shell:stage:staged');
      return result;
    },
  };

  /** The staged database; opened on first use (it may snapshot the real database). */
  async sql(): Promise<StagedSql> {
    if (this.sqlPart) return this.sqlPart;
    const options = this.runtime.sqlOptions;
    if (!options) throw new BoothNotConfiguredError('sql');
    const fault = this.runtime.faultPoint;
    this.sqlPart = await StagedSql.open({
      ...options,
      stagingDir: path.join(this.dir, 'sql'),
      faultPoint: (point) => fault(`sql:${point}`),
    });
    if (this.step !== null) this.sqlPart.enterStep(this.step.id);
    return this.sqlPart;
  }

  get hasSql(): boolean {
    return this.runtime.sqlOptions !== null;
  }

  /** Whether this run has touched the database; opening it untouched would snapshot it for nothing. */
  private async sqlInUse(): Promise<boolean> {
    if (!this.hasSql) return false;
    return this.sqlPart !== null || (await lstatOrNull(path.join(this.dir, 'sql'))) !== null;
  }

  /** Everything staged, as verifiers and gates see it. */
  async changeSet(): Promise<BoothChangeSet> {
    return {
      files: await this.files.changes(),
      sql: (await this.sqlInUse()) ? await (await this.sql()).writeSet() : null,
      mcp: await this.mcp.calls(),
    };
  }

  // ── files: commit and compensation ─────────────────────────────────────────────────────────────────────

  private get undoDir() {
    return path.join(this.dir, 'undo');
  }

  /**
   * Saves what the real tree holds at every staged path, then commits the files. Journaled and idempotent: a
   * retry finishes an interrupted commit, and the undo plan written by the first attempt is kept.
   */
  async commitFiles(): Promise<FilesCommitReport> {
    const ws = this.files.workspace;
    const changes = await ws.changes();
    if (changes.length > 0 && (await readUndo(this.undoDir)) === null) await this.saveUndo(changes);
    await this.runtime.faultPoint('files:undo-saved');
    const result = await ws.commit();
    return { ...result, changes: changes.map((c) => ({ path: c.path, op: c.op, summary: c.summary })) };
  }

  /** Puts back what the files commit replaced. Does nothing when the commit never applied. */
  async compensateFiles(): Promise<{ restored: number }> {
    const ws = this.files.workspace;
    await ws.recover();
    const plan = await readUndo(this.undoDir);
    if (plan === null || plan.compensated || (await ws.changes()).length > 0) return { restored: 0 };
    const fault = this.runtime.faultPoint;
    const restore = await StagedWorkspace.open({
      root: this.runtime.config.workspaceRoot,
      stagingDir: path.join(this.undoDir, 'restore'),
      faultPoint: (point) => fault(`files:undo:${point}`),
      // It puts back what the real tree held, set-id bits and sizes included.
      allowSpecialModes: true,
      maxStagedBytes: Number.POSITIVE_INFINITY,
    });
    await restore.recover();
    // Children first for what the commit created, parents first for what it replaced.
    for (const item of [...plan.items].reverse())
      if (item.before.type === 'none') await restore.rm(item.path, { recursive: true, force: true });
    for (const item of plan.items) {
      const b = item.before;
      if (b.type === 'file') {
        if ((await restore.exists(item.path)) && (await restore.stat(item.path)).type === 'dir')
          await restore.rm(item.path, { recursive: true });
        await restore.writeFile(item.path, await fs.readFile(path.join(this.undoDir, 'blobs', b.hash)), {
          mode: b.mode,
        });
      } else if (b.type === 'dir') {
        if ((await restore.exists(item.path)) && (await restore.stat(item.path)).type !== 'dir')
          await restore.rm(item.path);
        if (!(await restore.exists(item.path))) await restore.mkdir(item.path, { mode: b.mode });
        else await restore.chmod(item.path, b.mode);
      }
    }
    await this.runtime.faultPoint('files:undo-staged');
    await restore.commit();
    await atomicWriteJson(path.join(this.undoDir, 'plan.json'), { ...plan, compensated: true });
    return { restored: plan.items.length };
  }

  private async saveUndo(changes: Change[]): Promise<void> {
    const reader = await StagedWorkspace.open({
      root: this.runtime.config.workspaceRoot,
      stagingDir: path.join(this.undoDir, 'read'),
    });
    const items: UndoItem[] = [];
    const seen = new Set<string>();
    await fs.mkdir(path.join(this.undoDir, 'blobs'), { recursive: true });
    const snapshot = async (p: string, base: Base | { type: 'probe' }): Promise<void> => {
      if (seen.has(p)) return;
      seen.add(p);
      const real = base.type === 'probe' ? await realState(reader, p) : base;
      if (real.type === 'hidden') return;
      if (real.type === 'none') {
        items.push({ path: p, before: { type: 'none' } });
      } else if (real.type === 'file') {
        const bytes = await reader.readFile(p);
        const hash = sha256(bytes);
        await atomicWrite(path.join(this.undoDir, 'blobs', hash), bytes, 0o600);
        items.push({ path: p, before: { type: 'file', hash, mode: real.mode } });
      } else {
        items.push({ path: p, before: { type: 'dir', mode: real.mode } });
        // A deleted or recreated directory takes its real children with it: save the whole tree.
        for (const name of await reader.readdir(p)) await snapshot(`${p}/${name}`, { type: 'probe' });
      }
    };
    for (const c of changes) {
      const replacesTree =
        c.before.type === 'dir' && (c.after.type !== 'dir' || c.op === 'mkdir' || c.op === 'rename');
      await snapshot(c.path, replacesTree ? { type: 'probe' } : c.before);
    }
    await atomicWriteJson(path.join(this.undoDir, 'plan.json'), {
      format: 'jukebox-files-undo/1',
      items,
      compensated: false,
    } satisfies UndoPlan);
  }

  // ── sql and mcp ────────────────────────────────────────────────────────────────────────────────────────

  async commitSql(): Promise<SqlCommitResult | null> {
    if (!(await this.sqlInUse())) return null;
    await this.runtime.faultPoint('sql:before-commit');
    const result = await (await this.sql()).commit();
    await this.runtime.faultPoint('sql:committed');
    return result;
  }

  /**
   * Undoes the SQL commit: the one `result` reports, or, without it (the SQL part failed and never reported),
   * whatever the run's staged database applied, if anything. Null when there was nothing to undo.
   */
  async compensateSql(result?: SqlCommitResult): Promise<SqlCompensateResult | null> {
    if (result) return (await this.sql()).compensate(result);
    if (!(await this.sqlInUse())) return null;
    return (await this.sql()).compensateApplied();
  }

  // ── the end of a run's staging ─────────────────────────────────────────────────────────────────────────

  /** Removes every trace of the run's staging; the booth is spent. Idempotent. */
  async removeStaging(): Promise<void> {
    await this.sqlPart?.close();
    this.sqlPart = null;
    await fs.rm(this.dir, { recursive: true, force: true });
    // The per-workflow folder too, when this was its last run.
    await fs.rmdir(path.dirname(this.dir)).catch(() => {});
  }

  /**
   * Throws away everything staged (files, database, escrow): nothing reaches the real targets. Returns the MCP
   * calls a commit had already sent (kept in `<run folder>.mcp-sent.json`), which no discard can take back.
   */
  async discard(): Promise<{ mcpSent: SentCall[] }> {
    const ws = this.files.workspace;
    await ws.recover();
    await ws.discard();
    // The run's rollback is its durable end: no discarded folder may outlive the activity.
    await ws.reclaimed();
    if (await this.sqlInUse()) await (await this.sql()).discard();
    const mcpSent = await this.mcp.discard();
    await this.removeStaging();
    return { mcpSent };
  }

  async close(): Promise<void> {
    await this.sqlPart?.close();
    this.sqlPart = null;
  }
}

async function realState(reader: StagedWorkspace, p: string): Promise<Base> {
  if (!(await reader.exists(p))) return { type: 'none' };
  const st = await reader.stat(p);
  return st.type === 'dir'
    ? { type: 'dir', mode: st.mode }
    : { type: 'file', hash: '', size: st.size, mode: st.mode };
}

async function readUndo(dir: string): Promise<UndoPlan | null> {
  try {
    return JSON.parse(await fs.readFile(path.join(dir, 'plan.json'), 'utf8')) as UndoPlan;
  } catch (err) {
    if (isCode(err, 'ENOENT')) return null;
    throw err;
  }
}

/** The booth of a tool's invocation, or a typed error saying the worker needs one. */
export function requireBooth(invocation: { booth?: ShadowBooth }, tool: string): ShadowBooth {
  if (!invocation.booth)
    throw new BoothNotConfiguredError(`workspace (tool ${tool} stages its side effects in it)`);
  return invocation.booth;
}
