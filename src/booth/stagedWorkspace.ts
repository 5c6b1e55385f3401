/**
 * The file part of the Shadow Booth: a copy-on-write overlay over a real directory. Reads fall through to the
 * real tree; writes go to a staging area on disk and reach the real tree only through commit(). See
 * docs/shadow-booth.md for the rules.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { printable, quoted } from '../errors';
import { type Change, changeSetOf, conflictsOf } from './changeSet';
import {
  type FaultHook,
  JOURNAL_FORMAT,
  type Journal,
  loadJournal,
  planSteps,
  removeStaging,
  runJournal,
  writeJournal,
} from './commit';
import { atomicWrite, fsyncDir, isCode, lstatOrNull, sha256 } from './durable';
import { removeAt } from './entryChanges';
import {
  CommitConflictError,
  CommitPendingError,
  PathRefusedError,
  StagedBytesLimitError,
  WorkspaceConfigError,
  WorkspaceFsError,
} from './errors';
import { loadStaged, materializeBlobs, restoreBlob, type StepLogAt, writeMerged } from './layerMerge';
import {
  type Base,
  BLOBS_DIR,
  type DirEntry,
  type Entry,
  type FileEntry,
  JOURNAL_FILE,
  LAYER_FORMAT,
  type Layer,
  layerOf,
  MANIFEST_FORMAT,
  MARKER_FILE,
  type StepRecord,
  saveManifest,
  validateEntries,
} from './manifest';
import { isWithin, keyRel, MAX_PATH_BYTES, normalizeInput, type Rel, relKey, startsWith } from './paths';
import { readReal, realLstat } from './realTree';
import {
  canonicalStaging,
  DISCARDED_INFIX,
  findRetired,
  isMarkerTemp,
  makeStagingArea,
  removeRetired,
} from './stagingFolder';
import { MAX_INLINE_BYTES } from './stepLog';
import { stampTree } from './treeStamp';

/** Default of `maxStagedBytes`: the staged file bytes a run may hold. */
export const DEFAULT_MAX_STAGED_BYTES = 256 * 1024 * 1024;
/** setuid, setgid and sticky. */
const SPECIAL_MODE_BITS = 0o7000;

export interface StagedWorkspaceOptions {
  /** The real directory agents work in. Must exist. */
  root: string;
  /** Where staged content, the manifest and the commit journal live; created on the first write. */
  stagingDir: string;
  /**
   * Called at named points (`stage:before-manifest`, `stage:manifest-written`, `commit:planned`, `commit:journal-written`,
   * `commit:file-applied:N`, `commit:applied`, `commit:manifest-removed`, `commit:done`; a step layer's checkpoint:
   * `steplog:mid-append`, `steplog:appended`, `steplog:synced`) so tests can crash there.
   */
  faultPoint?: FaultHook;
  /**
   * Real files with more than one link may share their inode with a file outside the root. `refuse` (default)
   * refuses reading or rewriting their content; `copy-on-write` allows it, and commit replaces the name with a
   * fresh inode so the other links keep the old bytes.
   */
  hardLinks?: 'refuse' | 'copy-on-write';
  /** Mode of newly created files (default 0o644) and directories (default 0o755). */
  fileMode?: number;
  dirMode?: number;
  /**
   * Stage into a step layer in this folder instead of the manifest: reads see the staging plus the layer, which
   * joins the staging only through `StagedWorkspace.mergeLayer` (a tool step's completion). Such an instance
   * cannot commit or discard; the booth drops a layer by deleting its folder.
   */
  layerDir?: string;
  /**
   * Whether staged modes may keep setuid, setgid and sticky bits. False (default): they are stripped at
   * staging, and the change set shows the mode asked for as refused (`Change.modeRefused`), so commit never
   * creates a set-id file, owned by whoever runs the worker.
   */
  allowSpecialModes?: boolean;
  /**
   * The most bytes of file content the staging may hold (sum of the staged files' sizes; default 256 MiB). An
   * operation that would pass it throws StagedBytesLimitError and stages nothing; one that shrinks the total is
   * always allowed.
   */
  maxStagedBytes?: number;
  /**
   * Paths the booth itself owns besides `stagingDir` (the staging root of every run, the SQLite database the
   * booth stages SQL against and its journals). Those inside the root are refused like the staging area, to
   * reads and writes of the file API and of shell commands, and left out of listings: else a run could stage
   * a rewrite of the database's file (past SQL confinement and the gates that read its statements) or of
   * another run's staging, and read its own session's credentials.
   */
  boothOwned?: string[];
}

export type NodeType = 'file' | 'dir';

export interface WorkspaceStat {
  type: NodeType;
  size: number;
  /** Permission bits (mode & 0o7777). */
  mode: number;
  /** True when this path's state comes from the staging area rather than the real tree. */
  staged: boolean;
}

export type { Change, ChangeOp } from './changeSet';

export interface CommitResult {
  /** Journal steps applied (files written, directories made, trees deleted). */
  steps: number;
  /** True when the call finished a commit an earlier process had started. */
  recovered: boolean;
}

type Resolved = {
  rel: Rel;
  key: string;
  input: string;
  entry: Entry | undefined;
  /** lstat of the real path when it is visible (no staged ancestor hides it). */
  real: Stats | null;
  /** An ancestor in staging hides the real entries at and below this path. */
  hidden: boolean;
  type: NodeType | 'none';
};

const NOENT = new Set(['ENOENT', 'ENOTDIR']);

/** Marks the async context of a stageBatch() callback, so only its own calls join the batch. */
const batchScope = new AsyncLocalStorage<{ ws: StagedWorkspace; next: Record<string, Entry> }>();

export class StagedWorkspace {
  readonly root: string;
  readonly stagingDir: string;
  private readonly roots: string[];
  private readonly stagingRel: Rel | null;
  /** The staging area and the booth-owned paths inside the root, which no caller may reach. */
  private readonly reserved: { rel: Rel; reason: 'staging-dir' | 'booth-owned' }[];
  private readonly fault: FaultHook;
  private readonly hardLinks: 'refuse' | 'copy-on-write';
  private readonly fileMode: number;
  private readonly dirMode: number;
  private readonly allowSpecialModes: boolean;
  readonly maxStagedBytes: number;
  /** The running operation's bytes: the staged total when it began, and what its writes added so far. */
  private opBytes = { start: 0, added: 0 };
  private entries: Record<string, Entry>;
  private pending: boolean;
  /** Layer mode: the folder and the manifest's entries the layer applies to. */
  private layer: { dir: string; base: Record<string, Entry> } | null = null;
  private steps: Record<string, StepRecord> = {};
  /** Where the step log ended when this instance read it (src/booth/layerMerge.ts). */
  private logAt: StepLogAt | null = null;
  /** Blob bytes the step log carries, for a blob whose name a crash did not keep. */
  private inline = new Map<string, Buffer>();
  /** Layer mode: the bytes of the blobs this layer wrote, which its step-log record carries. */
  private layerBlobData = new Map<string, Buffer>();
  /** Layer mode: this layer refers to a blob whose directory entry may not be fsynced yet (`syncBlobs`). */
  private layerBlobs = false;
  private stagingReady = false;
  private queue: Promise<unknown> = Promise.resolve();
  private reclaiming: Promise<void> = Promise.resolve();
  private reclaimError: unknown = null;

  private constructor(
    o: StagedWorkspaceOptions,
    root: string,
    roots: string[],
    stagingDir: string,
    entries: Record<string, Entry>,
    pending: boolean,
    boothOwned: string[],
  ) {
    this.root = root;
    this.roots = roots;
    this.stagingDir = stagingDir;
    const relIn = (p: string): Rel | null =>
      isWithin(root, p) ? path.relative(root, p).split(path.sep) : null;
    this.stagingRel = relIn(stagingDir);
    this.reserved = [
      ...(this.stagingRel ? [{ rel: this.stagingRel, reason: 'staging-dir' as const }] : []),
      ...boothOwned.flatMap((p) => {
        const rel = relIn(p);
        return rel ? [{ rel, reason: 'booth-owned' as const }] : [];
      }),
    ];
    this.fault = o.faultPoint ?? (() => {});
    this.hardLinks = o.hardLinks ?? 'refuse';
    this.fileMode = o.fileMode ?? 0o644;
    this.dirMode = o.dirMode ?? 0o755;
    this.allowSpecialModes = o.allowSpecialModes === true;
    this.maxStagedBytes = o.maxStagedBytes ?? DEFAULT_MAX_STAGED_BYTES;
    this.entries = entries;
    this.pending = pending;
  }

  /**
   * Opens the overlay without copying anything: cost is a realpath of the root and reading the manifest and the
   * step log (src/booth/layerMerge.ts), if a previous process left them (that is how a restarted worker or a
   * Temporal retry sees its staged changes).
   */
  static async open(o: StagedWorkspaceOptions): Promise<StagedWorkspace> {
    let root: string;
    try {
      root = await fs.realpath(path.resolve(o.root));
    } catch (err) {
      throw new WorkspaceConfigError(`workspace root ${o.root} does not exist; create it first`, err);
    }
    if (!(await fs.stat(root)).isDirectory())
      throw new WorkspaceConfigError(`workspace root ${root} is not a directory; pass a directory`);
    const stagingDir = await canonicalStaging(path.resolve(o.stagingDir));
    if (isWithin(stagingDir, root))
      throw new WorkspaceConfigError(
        `stagingDir ${stagingDir} is the workspace root or contains it; put it beside or inside the root`,
      );
    const st = await lstatOrNull(stagingDir);
    let entries: Record<string, Entry> = {};
    let steps: Record<string, StepRecord> = {};
    let pending = false;
    let staged: ReturnType<typeof loadStaged> | null = null;
    if (st !== null) {
      if (!st.isDirectory() || st.isSymbolicLink())
        throw new WorkspaceConfigError(
          `stagingDir ${stagingDir} exists and is not a directory; pick another path`,
        );
      const names = await fs.readdir(stagingDir);
      // Another process may be making the area right now: its marker comes first (makeStagingArea).
      if (names.some((n) => !isMarkerTemp(n)) && !names.includes(MARKER_FILE))
        throw new WorkspaceConfigError(
          `stagingDir ${stagingDir} is a non-empty directory that is not a staging area (no ${MARKER_FILE}); pick an empty or new path`,
        );
      staged = loadStaged(stagingDir, root);
      entries = staged.entries;
      steps = staged.steps;
      pending = names.includes(JOURNAL_FILE);
    }
    const roots = [...new Set([path.resolve(o.root), root])];
    const boothOwned: string[] = [];
    for (const p of o.boothOwned ?? []) {
      const abs = await canonicalStaging(path.resolve(p));
      // One that is or holds the root (a staging root above the workspace) cannot be refused as a whole; what of
      // it lies inside the root is the staging area, refused on its own.
      if (!isWithin(abs, root)) boothOwned.push(abs);
    }
    // A step layer starts empty: it lives in memory only, and a retry throws a dead attempt's away.
    const base = entries;
    const ws = new StagedWorkspace(o, root, roots, stagingDir, entries, pending, boothOwned);
    ws.steps = steps;
    if (staged !== null) {
      ws.logAt = staged.log;
      ws.inline = staged.inline;
    }
    if (o.layerDir !== undefined) ws.layer = { dir: o.layerDir, base };
    // In the background: open stays O(1), and reclaimed() covers it.
    if (ws.stagingRel === null)
      ws.reclaiming = findRetired(ws.stagingDir).then((dirs) => ws.removeRetired(dirs));
    return ws;
  }

  // ── reads ──────────────────────────────────────────────────────────────────────────────────────────────

  async readFile(p: string): Promise<Buffer>;
  async readFile(p: string, encoding: BufferEncoding): Promise<string>;
  async readFile(p: string, encoding?: BufferEncoding): Promise<Buffer | string> {
    const r = await this.resolve(this.input(p, false), p);
    if (r.type === 'none') throw new WorkspaceFsError(p, 'ENOENT', 'does not exist in the workspace');
    if (r.type === 'dir') throw new WorkspaceFsError(p, 'EISDIR', 'is a directory; use readdir()');
    const data = await this.content(r, true);
    return encoding === undefined ? data : data.toString(encoding);
  }

  async stat(p: string): Promise<WorkspaceStat> {
    const r = await this.resolve(this.input(p, false), p);
    if (r.type === 'none') throw new WorkspaceFsError(p, 'ENOENT', 'does not exist in the workspace');
    const e = r.entry;
    if (e !== undefined && e.kind !== 'whiteout')
      return { type: r.type, size: e.kind === 'file' ? e.size : 0, mode: e.mode, staged: true };
    const st = r.real!;
    return { type: r.type, size: st.isFile() ? st.size : 0, mode: st.mode & 0o7777, staged: false };
  }

  /** False for a missing path; a path that escapes or is refused still throws, so probing reveals nothing. */
  async exists(p: string): Promise<boolean> {
    try {
      return (await this.resolve(this.input(p, false), p)).type !== 'none';
    } catch (err) {
      if (err instanceof WorkspaceFsError && NOENT.has(err.fsCode)) return false;
      throw err;
    }
  }

  /** Names in the merged view, sorted. Symlinks and special files in the real tree are listed but unusable. */
  async readdir(p: string): Promise<string[]> {
    const r = await this.resolve(this.input(p, false), p);
    if (r.type === 'none') throw new WorkspaceFsError(p, 'ENOENT', 'does not exist in the workspace');
    if (r.type === 'file') throw new WorkspaceFsError(p, 'ENOTDIR', 'is a file; use readFile()');
    return this.list(r);
  }

  // ── staged writes ──────────────────────────────────────────────────────────────────────────────────────

  async writeFile(p: string, data: Uint8Array | string, opts: { mode?: number } = {}): Promise<void> {
    await this.mutate('write', async (next) => {
      const r = await this.resolve(this.input(p, true), p);
      const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
      if (r.type === 'dir')
        throw new WorkspaceFsError(p, 'EISDIR', 'is a directory; a file cannot replace it');
      if (r.type === 'file') this.checkHardLink(r, 'overwrite');
      const mode = opts.mode ?? (r.type === 'file' ? this.modeOf(r) : this.fileMode);
      await this.putFile(next, r, bytes, mode, 'write');
    });
  }

  async appendFile(p: string, data: Uint8Array | string): Promise<void> {
    await this.mutate('append', async (next) => {
      const r = await this.resolve(this.input(p, true), p);
      if (r.type === 'dir') throw new WorkspaceFsError(p, 'EISDIR', 'is a directory; cannot append to it');
      const extra = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
      const old = r.type === 'file' ? await this.content(r, true) : Buffer.alloc(0);
      const mode = r.type === 'file' ? this.modeOf(r) : this.fileMode;
      await this.putFile(next, r, Buffer.concat([old, extra]), mode, 'write');
    });
  }

  async mkdir(p: string, opts: { recursive?: boolean; mode?: number } = {}): Promise<void> {
    await this.mutate('mkdir', async (next) => {
      const rel = this.input(p, true);
      for (let i = 1; i <= rel.length; i++) {
        const last = i === rel.length;
        // Resolve against `next`, so ancestors created earlier in this call count as existing.
        const r = await this.resolve(rel.slice(0, i), p, next);
        if (r.type === 'dir') {
          if (last && !opts.recursive) throw new WorkspaceFsError(p, 'EEXIST', 'already exists');
          continue;
        }
        if (r.type === 'file')
          throw new WorkspaceFsError(
            p,
            last ? 'EEXIST' : 'ENOTDIR',
            `${printable(r.key)} is a file, not a directory`,
          );
        if (!last && !opts.recursive)
          throw new WorkspaceFsError(
            p,
            'ENOENT',
            `parent ${printable(r.key)} does not exist; pass { recursive: true }`,
          );
        next[r.key] = {
          kind: 'dir',
          op: 'mkdir',
          ...this.modeFields(opts.mode ?? this.dirMode),
          opaque: true,
          base: await this.baseOf(r),
        };
      }
    });
  }

  async rm(p: string, opts: { recursive?: boolean; force?: boolean } = {}): Promise<void> {
    await this.mutate('rm', async (next) => {
      let r: Resolved;
      try {
        r = await this.resolve(this.input(p, true), p);
      } catch (err) {
        if (opts.force && err instanceof WorkspaceFsError && NOENT.has(err.fsCode)) return;
        throw err;
      }
      if (r.type === 'none') {
        if (opts.force) return;
        throw new WorkspaceFsError(p, 'ENOENT', 'does not exist in the workspace');
      }
      if (r.type === 'dir' && !opts.recursive && (await this.list(r)).length > 0)
        throw new WorkspaceFsError(p, 'ENOTEMPTY', 'is a non-empty directory; pass { recursive: true }');
      removeAt(next, r.key, await this.baseOf(r));
    });
  }

  /** Moves a file or a directory tree; a real tree is copied into staging (cost grows with its size). */
  async rename(from: string, to: string): Promise<void> {
    await this.mutate('rename', async (next) => {
      const a = this.input(from, true);
      const b = this.input(to, true);
      if (relKey(a) === relKey(b)) return;
      if (startsWith(b, a))
        throw new WorkspaceFsError(to, 'EINVAL', `is inside ${from}; cannot move a directory into itself`);
      const src = await this.resolve(a, from);
      if (src.type === 'none') throw new WorkspaceFsError(from, 'ENOENT', 'does not exist in the workspace');
      const dst = await this.resolve(b, to);
      if (dst.type === 'dir' && src.type === 'file')
        throw new WorkspaceFsError(to, 'EISDIR', 'is a directory; a file cannot replace it');
      if (dst.type === 'file' && src.type === 'dir')
        throw new WorkspaceFsError(to, 'ENOTDIR', 'is a file; a directory cannot replace it');
      if (dst.type === 'dir' && (await this.list(dst)).length > 0)
        throw new WorkspaceFsError(to, 'ENOTEMPTY', 'is a non-empty directory');
      const items: { suffix: Rel; entry: FileEntry | DirEntry }[] = [];
      await this.collect(src, [], items);
      const dstBase = await this.baseOf(dst);
      const srcBase = await this.baseOf(src);
      removeAt(next, src.key, srcBase);
      if (dst.type !== 'none') removeAt(next, dst.key, dstBase);
      for (const { suffix, entry } of items) {
        const key = relKey([...b, ...suffix]);
        // Below the moved top, the real tree at the destination is hidden by the new (opaque) directory.
        const base: Base = suffix.length === 0 ? dstBase : { type: 'hidden' };
        next[key] = { ...entry, op: 'rename', from: relKey([...a, ...suffix]), base };
      }
    });
  }

  async chmod(p: string, mode: number): Promise<void> {
    await this.mutate('chmod', async (next) => {
      const r = await this.resolve(this.input(p, true), p);
      if (r.type === 'none') throw new WorkspaceFsError(p, 'ENOENT', 'does not exist in the workspace');
      const bits = mode & 0o7777;
      const e = r.entry;
      if (e !== undefined && e.kind !== 'whiteout') {
        const { refusedMode: _, ...rest } = e;
        next[r.key] = { ...rest, ...this.modeFields(bits) };
      } else if (r.type === 'dir') {
        next[r.key] = {
          kind: 'dir',
          op: 'chmod',
          ...this.modeFields(bits),
          opaque: false,
          base: await this.baseOf(r),
        };
      } else {
        // Commit never chmods a real file in place (its inode may be shared); it writes a fresh copy.
        this.checkHardLink(r, 'chmod');
        await this.putFile(next, r, await this.content(r, true), bits, 'chmod');
      }
    });
  }

  /**
   * Runs several staged operations (the public write methods, called inside `fn`) as one: a single manifest
   * write, all or nothing, so a refusal halfway leaves the change set as it was. StagedShell imports a command's
   * writes with it. Reads by other callers during the batch may see its operations before it completes.
   */
  async stageBatch(fn: () => Promise<void>): Promise<void> {
    await this.mutate('batch', async (next) => {
      const saved = this.entries;
      // Each operation resolves against the entries; pointing them at `next` lets later ones see earlier ones.
      this.entries = next;
      try {
        await batchScope.run({ ws: this, next }, fn);
      } finally {
        this.entries = saved;
      }
    });
  }

  // ── change set, rollback, commit ───────────────────────────────────────────────────────────────────────

  /** The staged change set, parents before children, with sizes and text diffs for verifiers. */
  changes(): Promise<Change[]> {
    return changeSetOf(this.root, this.entries, (hash) => this.readBlob(hash));
  }

  /**
   * Throws the staged changes away. Nothing on the real disk changed, so this is a complete rollback. It
   * returns once the staging area is unreachable: one rename moves it to a sibling `.discarded-*` folder,
   * which is deleted in the background; `reclaimed()` waits for that deletion and makes it durable. A staging
   * area inside the workspace root is deleted before returning, because a sibling there would be visible.
   */
  async discard(): Promise<void> {
    this.refuseInLayer('discard');
    await this.exclusive(async () => {
      if (this.pending || (await lstatOrNull(path.join(this.stagingDir, JOURNAL_FILE))) !== null)
        throw new CommitPendingError(this.stagingDir, 'discard');
      if (this.stagingRel !== null) return this.dropStaging();
      const retired = `${this.stagingDir}${DISCARDED_INFIX}${randomBytes(6).toString('hex')}`;
      try {
        await fs.rename(this.stagingDir, retired);
      } catch (err) {
        if (NOENT.has((err as { code?: string }).code ?? '')) return this.reset();
        throw err;
      }
      this.reset();
      this.reclaim([retired]);
    });
  }

  /**
   * Resolves when every staging area this instance discarded (and any a crashed process left behind) is
   * deleted and the deletion is durable; rejects with the first deletion that failed.
   */
  async reclaimed(): Promise<void> {
    await this.reclaiming;
    if (this.reclaimError !== null) {
      const err = this.reclaimError;
      this.reclaimError = null;
      throw err;
    }
  }

  /**
   * Applies the change set to the real root, one atomic rename per file, behind a commit journal; then removes
   * the staging area. Finishes an interrupted commit first if one is on disk. `force` skips the check that the
   * real entries are still what they were when staged.
   */
  async commit(opts: { force?: boolean } = {}): Promise<CommitResult> {
    this.refuseInLayer('commit');
    return this.exclusive(async () => {
      const resumed = await this.finishPending();
      if (resumed !== null) return resumed;
      if (Object.keys(this.entries).length === 0) {
        await this.dropStaging();
        await this.fault('commit:done');
        return { steps: 0, recovered: false };
      }
      if (!opts.force) {
        const conflicts = await conflictsOf(this.root, this.stagingDir, this.entries, (hash) =>
          this.readBlob(hash),
        );
        if (conflicts.length > 0) throw new CommitConflictError(conflicts);
      }
      const j: Journal = {
        format: JOURNAL_FORMAT,
        id: randomBytes(8).toString('hex'),
        root: this.root,
        state: 'applying',
        steps: planSteps(this.entries),
      };
      await this.fault('commit:planned');
      await this.ensureStaging();
      // The journal applies from blobs/ alone: blobs only the step log held durably go there first.
      await materializeBlobs(this.stagingDir, this.inline);
      await writeJournal(this.stagingDir, j);
      this.pending = true;
      await this.fault('commit:journal-written');
      await runJournal(this.root, this.stagingDir, j, this.fault);
      this.reset();
      await this.fault('commit:done');
      return { steps: j.steps.length, recovered: false };
    });
  }

  /**
   * Brings this instance in line with the disk after a crash: finishes an interrupted commit, removes a
   * half-removed staging area, and reloads the manifest and the step log. Idempotent.
   */
  async recover(): Promise<CommitResult> {
    return this.exclusive(async () => {
      const resumed = await this.finishPending();
      if (resumed !== null) return resumed;
      const s = loadStaged(this.stagingDir, this.root);
      this.entries = s.entries;
      this.steps = s.steps;
      this.logAt = s.log;
      this.inline = s.inline;
      const empty = s.manifest === null && (s.log?.records ?? 0) === 0;
      if (empty && (await lstatOrNull(path.join(this.stagingDir, MARKER_FILE))) !== null)
        await this.dropStaging();
      return { steps: 0, recovered: false };
    });
  }

  /**
   * Merges a step layer into the run's staging with one record appended to the step log (fdatasynced), which
   * also records the step's id, so merging the same layer again (a retry that finds the step's checkpoint)
   * changes nothing. Returns whether this call merged it.
   */
  static async mergeLayer(o: {
    root: string;
    stagingDir: string;
    layer: Layer;
    step: string;
    record: StepRecord;
    /** Bytes of blobs the layer wrote whose names may not be durable (the step's checkpoint carried them). */
    blobs?: Map<string, Buffer>;
    faultPoint?: FaultHook;
  }): Promise<boolean> {
    const root = await fs.realpath(path.resolve(o.root));
    const stagingDir = await canonicalStaging(path.resolve(o.stagingDir));
    validateEntries(stagingDir, o.layer.set);
    return writeMerged(root, stagingDir, o.layer, o.step, o.record, {
      stagingReady: false,
      blobs: o.blobs ?? new Map(),
      ...(o.faultPoint ? { fault: o.faultPoint } : {}),
    });
  }

  /**
   * Layer mode, at the step's completion: `mergeLayer` of this instance's own layer, without resolving paths
   * or re-creating a staging area this instance already made, reading only the part of the step log appended
   * since this instance read it. The record carries the bytes of the blobs the layer wrote
   * (`checkpointBlobs`), so their names need no directory fsync; past the inline limit they get one instead,
   * before the append. `before` is durable work that must finish before the append (src/booth/layerMerge.ts).
   */
  async mergeOwnLayer(
    step: string,
    record: StepRecord,
    o: { before?: () => Promise<void> } = {},
  ): Promise<boolean> {
    if (this.layer === null) throw new WorkspaceConfigError('mergeOwnLayer() needs a step layer');
    const layer = this.layerDelta() ?? { format: LAYER_FORMAT, root: this.root, set: {}, removed: [] };
    const blobs = this.checkpointBlobs();
    // Blobs too large to carry make their names durable before the append instead.
    const before =
      blobs === null
        ? async () => {
            await this.syncBlobs();
            await o.before?.();
          }
        : o.before;
    return writeMerged(this.root, this.stagingDir, layer, step, record, {
      known: { at: this.logAt, steps: this.steps },
      stagingReady: this.stagingReady,
      blobs: blobs ?? new Map(),
      fault: this.fault,
      ...(before ? { before } : {}),
    });
  }

  /**
   * Layer mode: the bytes of the blobs the layer's entries name that this layer wrote, which its checkpoint
   * carries; null past `limit` bytes (the names are then made durable with `syncBlobs` instead).
   */
  checkpointBlobs(limit = MAX_INLINE_BYTES): Map<string, Buffer> | null {
    const out = new Map<string, Buffer>();
    let total = 0;
    for (const e of Object.values(this.layerDelta()?.set ?? {})) {
      // A directory's listing taken at staging is a blob too.
      const tree = e.base.type === 'dir' ? e.base.tree : undefined;
      for (const hash of [e.kind === 'file' ? e.hash : undefined, tree]) {
        if (hash === undefined || out.has(hash)) continue;
        const bytes = this.layerBlobData.get(hash);
        if (bytes === undefined) continue;
        total += bytes.length;
        if (total > limit) return null;
        out.set(hash, bytes);
      }
    }
    return out;
  }

  /** The checkpoint of step `id` in the staging this instance opened (merged staging, attempt, result). */
  stepRecord(id: string): StepRecord | null {
    return this.steps[id] ?? null;
  }

  /** Layer mode: what this step staged so far, as its checkpoint stores it; null when it staged nothing. */
  layerDelta(): Layer | null {
    if (this.layer === null) return null;
    const l = layerOf(this.root, this.layer.base, this.entries);
    return Object.keys(l.set).length > 0 || l.removed.length > 0 ? l : null;
  }

  private refuseInLayer(what: string): void {
    if (this.layer !== null)
      throw new WorkspaceConfigError(
        `${what}() on a step layer (${this.layer.dir}); a step's staging joins the run's only when the step completes`,
      );
  }

  // ── internals ──────────────────────────────────────────────────────────────────────────────────────────

  private async finishPending(): Promise<CommitResult | null> {
    const j = await loadJournal(this.stagingDir, this.root);
    if (j === null) {
      this.pending = false;
      return null;
    }
    await runJournal(this.root, this.stagingDir, j, this.fault);
    this.reset();
    await this.fault('commit:done');
    return { steps: j.steps.length, recovered: true };
  }

  private reset(): void {
    this.entries = {};
    this.pending = false;
    this.stagingReady = false;
  }

  /** Deletes retired staging folders after discard() returned; failures surface through reclaimed(). */
  private reclaim(retired: string[]): void {
    this.reclaiming = this.reclaiming.then(() => this.removeRetired(retired));
  }

  private async removeRetired(retired: string[]): Promise<void> {
    const err = await removeRetired(this.stagingDir, retired);
    if (err !== null) this.reclaimError ??= err;
  }

  private async dropStaging(): Promise<void> {
    if ((await lstatOrNull(this.stagingDir)) !== null) await removeStaging(this.stagingDir, () => {});
    this.reset();
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Runs a staged operation on a copy of the entries; only a successfully written manifest replaces them. */
  private async mutate(what: string, fn: (next: Record<string, Entry>) => Promise<void>): Promise<void> {
    const batch = batchScope.getStore();
    if (batch?.ws === this) return fn(batch.next);
    await this.exclusive(async () => {
      if (this.pending) throw new CommitPendingError(this.stagingDir, what);
      const next = structuredClone(this.entries);
      this.opBytes = { start: stagedBytesOf(this.entries), added: 0 };
      await fn(next);
      await this.settle(what, next);
      await this.fault('stage:before-manifest');
      await this.ensureStaging();
      // A layer lives in memory: a crash loses it, and a retry would throw it away anyway; its checkpoint (the
      // step-log record in mergeLayer) carries it to disk.
      if (this.layer === null)
        await saveManifest(this.stagingDir, {
          format: MANIFEST_FORMAT,
          root: this.root,
          entries: next,
          ...(Object.keys(this.steps).length > 0 ? { steps: this.steps } : {}),
        });
      this.entries = next;
      await this.fault('stage:manifest-written');
    });
  }

  private async ensureStaging(): Promise<void> {
    if (this.stagingReady) return;
    await makeStagingArea(this.stagingDir);
    this.stagingReady = true;
  }

  /**
   * Whether `key` (a path relative to the root, `/`-separated) is the staging area or a booth-owned path itself:
   * listings and shell views leave those out.
   */
  isReserved(key: string): boolean {
    return this.reserved.some((r) => relKey(r.rel) === key);
  }

  /** The staging area and the booth-owned paths inside the root, relative to it (`/`-separated). */
  get reservedPaths(): string[] {
    return this.reserved.map((r) => relKey(r.rel));
  }

  private input(p: string, mutate: boolean): Rel {
    const rel = normalizeInput(p, this.roots);
    if (Buffer.byteLength(path.join(this.root, ...rel)) > MAX_PATH_BYTES)
      throw new PathRefusedError(
        p,
        'path-too-long',
        `with the root prefix it exceeds ${MAX_PATH_BYTES} bytes`,
      );
    const reserved = this.reserved.find((r) => startsWith(rel, r.rel));
    if (reserved !== undefined)
      throw new PathRefusedError(
        p,
        reserved.reason,
        reserved.reason === 'staging-dir'
          ? 'it is inside the staging area, which only the booth may touch'
          : `the booth owns ${quoted(relKey(reserved.rel))} (the runs' staging, or the database SQL is staged against: change that through booth.sql())`,
      );
    if (mutate && rel.length === 0)
      throw new PathRefusedError(p, 'root', 'the workspace root itself cannot be written, moved or deleted');
    return rel;
  }

  /**
   * Walks the merged view one component at a time. Every visible real component is lstat'ed and any symlink or
   * special file refuses the whole path, which is what makes the lexical `..` handling in paths.ts sound.
   */
  private async resolve(rel: Rel, input: string, entries = this.entries): Promise<Resolved> {
    let hidden = false;
    let real: Stats | null = await realLstat(this.root, this.roots, [], input);
    for (let i = 0; i < rel.length; i++) {
      const prefix = rel.slice(0, i + 1);
      const key = relKey(prefix);
      const last = i === rel.length - 1;
      const entry = entries[key];
      const realIrrelevant = entry !== undefined && (entry.kind !== 'dir' || entry.opaque);
      real = hidden || realIrrelevant ? null : await realLstat(this.root, this.roots, prefix, input);
      let type: Resolved['type'];
      if (entry !== undefined) type = entry.kind === 'whiteout' ? 'none' : entry.kind;
      else type = real === null ? 'none' : real.isDirectory() ? 'dir' : 'file';
      if (last) return { rel, key, input, entry, real, hidden, type };
      if (type === 'none')
        throw new WorkspaceFsError(input, 'ENOENT', `parent ${printable(key)} does not exist`);
      if (type === 'file') throw new WorkspaceFsError(input, 'ENOTDIR', `parent ${printable(key)} is a file`);
      if (entry?.kind === 'dir' && (entry.opaque || real === null || !real.isDirectory())) hidden = true;
    }
    return { rel, key: '', input, entry: undefined, real, hidden: false, type: 'dir' };
  }

  private checkHardLink(r: Resolved, what: string): void {
    if (r.entry !== undefined || r.real === null || this.hardLinks === 'copy-on-write') return;
    if (r.real.nlink > 1)
      throw new PathRefusedError(
        r.input,
        'hard-link',
        `it has ${r.real.nlink} hard links and may share its inode with a file outside the root, so ${what} is refused; open the workspace with hardLinks: 'copy-on-write' to work on a private copy`,
      );
  }

  /** The mode a path was asked to have: a staged entry's refused mode when the booth stripped bits from it. */
  private modeOf(r: Resolved): number {
    const e = r.entry;
    if (e !== undefined && e.kind !== 'whiteout') return e.refusedMode ?? e.mode;
    return (r.real?.mode ?? this.fileMode) & 0o7777;
  }

  /** Content of a resolved file. `policy` false is for hashing only, where hard-link content never leaves. */
  private async content(r: Resolved, policy: boolean): Promise<Buffer> {
    const e = r.entry;
    if (e?.kind === 'file') return this.readBlob(e.hash);
    if (policy) this.checkHardLink(r, 'reading its content');
    return readReal(this.root, r.rel, r.real!, r.input);
  }

  private async readBlob(hash: string): Promise<Buffer> {
    try {
      return await fs.readFile(path.join(this.stagingDir, BLOBS_DIR, hash));
    } catch (err) {
      const carried = this.inline.get(hash);
      if (!isCode(err, 'ENOENT') || carried === undefined) throw err;
      // A crash kept the step-log record that carries it but not the blob's name: put it back.
      await restoreBlob(path.join(this.stagingDir, BLOBS_DIR), hash, carried);
      return Buffer.from(carried);
    }
  }

  private async putBlob(data: Buffer): Promise<string> {
    const hash = sha256(data);
    await this.ensureStaging();
    const file = path.join(this.stagingDir, BLOBS_DIR, hash);
    // A step layer's blobs share one directory fsync, at its checkpoint (syncBlobs).
    if ((await lstatOrNull(file)) === null)
      await atomicWrite(file, data, 0o600, undefined, this.layer !== null ? 'data' : true);
    // Also for a blob already there: a killed attempt may have left it without its directory fsync.
    if (this.layer !== null) {
      this.layerBlobs = true;
      this.layerBlobData.set(hash, data);
    }
    return hash;
  }

  /** Makes the names of blobs a step layer wrote durable: one directory fsync before the step's checkpoint. */
  async syncBlobs(): Promise<void> {
    if (!this.layerBlobs) return;
    await fsyncDir(path.join(this.stagingDir, BLOBS_DIR));
    this.layerBlobs = false;
  }

  private async putFile(
    next: Record<string, Entry>,
    r: Resolved,
    data: Buffer,
    mode: number,
    op: FileEntry['op'],
  ): Promise<void> {
    const base = await this.baseOf(r);
    const prev = next[r.key];
    this.countBytes(r.input, data.byteLength - (prev?.kind === 'file' ? prev.size : 0));
    const hash = await this.putBlob(data);
    next[r.key] = { kind: 'file', op, hash, size: data.byteLength, ...this.modeFields(mode), base };
  }

  /** The mode to stage for `requested`: without setuid, setgid and sticky unless the workspace allows them. */
  private modeFields(requested: number): { mode: number; refusedMode?: number } {
    const bits = requested & 0o7777;
    if (this.allowSpecialModes || (bits & SPECIAL_MODE_BITS) === 0) return { mode: bits };
    return { mode: bits & ~SPECIAL_MODE_BITS, refusedMode: bits };
  }

  /** Bytes of file content the staging holds (what commit would write). */
  stagedBytes(): number {
    return stagedBytesOf(this.entries);
  }

  /**
   * Refuses, before any content is read, a set of writes and deletions (a shell command's) that would take the
   * staged bytes past the limit; `stage` would refuse it anyway, after reading every file.
   */
  checkStagedBytes(
    changes: ReadonlyArray<{ op: string; path: string; size?: number }>,
    operation: string,
  ): void {
    const sizes = new Map<string, number>();
    for (const [key, e] of Object.entries(this.entries)) if (e.kind === 'file') sizes.set(key, e.size);
    const now = stagedBytesOf(this.entries);
    for (const c of changes) {
      const key = relKey(normalizeInput(c.path, this.roots));
      if (c.op === 'delete') {
        for (const k of [...sizes.keys()]) if (k === key || k.startsWith(`${key}/`)) sizes.delete(k);
      } else if (c.op === 'write') sizes.set(key, c.size ?? 0);
    }
    let total = 0;
    for (const size of sizes.values()) total += size;
    if (total > this.maxStagedBytes && total > now)
      throw new StagedBytesLimitError(null, this.maxStagedBytes, total, operation);
  }

  /** Counts a write of the running operation before its blob is written, so a refused one writes nothing. */
  private countBytes(input: string, delta: number): void {
    this.opBytes.added += delta;
    const total = this.opBytes.start + this.opBytes.added;
    if (delta > 0 && total > this.maxStagedBytes)
      throw new StagedBytesLimitError(input, this.maxStagedBytes, total);
  }

  /**
   * After an operation, before its manifest is written: the exact staged total must not pass the limit (unless
   * it shrank), and each directory the change set now removes or replaces gets the listing of its real tree
   * (src/booth/treeStamp.ts), which commit compares to refuse when anything inside changed.
   */
  private async settle(what: string, next: Record<string, Entry>): Promise<void> {
    const total = stagedBytesOf(next);
    if (total > this.maxStagedBytes && total > this.opBytes.start)
      throw new StagedBytesLimitError(null, this.maxStagedBytes, total, `staged ${what}`);
    for (const [key, e] of Object.entries(next)) {
      const b = e.base;
      if (b.type !== 'dir' || b.tree !== undefined || (e.kind === 'dir' && !e.opaque)) continue;
      const tree = await this.putBlob(await stampTree(path.join(this.root, ...keyRel(key))));
      next[key] = { ...e, base: { ...b, tree } };
    }
  }

  /** What the real tree holds at a path, kept from the first time the path was staged. */
  private async baseOf(r: Resolved): Promise<Base> {
    if (r.entry !== undefined) return r.entry.base;
    if (r.hidden) return { type: 'hidden' };
    if (r.real === null) return { type: 'none' };
    if (r.real.isDirectory()) return { type: 'dir', mode: r.real.mode & 0o7777 };
    const data = await readReal(this.root, r.rel, r.real, r.input);
    return { type: 'file', hash: sha256(data), size: data.byteLength, mode: r.real.mode & 0o7777 };
  }

  private async list(r: Resolved): Promise<string[]> {
    const names = new Set<string>();
    const e = r.entry;
    const realVisible =
      !r.hidden && r.real?.isDirectory() && (e === undefined || (e.kind === 'dir' && !e.opaque));
    if (realVisible) {
      for (const name of await fs.readdir(path.join(this.root, ...r.rel))) {
        const child = [...r.rel, name];
        if (this.isReserved(relKey(child))) continue;
        if (this.entries[relKey(child)]?.kind === 'whiteout') continue;
        names.add(name);
      }
    }
    const prefix = r.key === '' ? '' : `${r.key}/`;
    for (const [key, entry] of Object.entries(this.entries)) {
      if (entry.kind === 'whiteout' || !key.startsWith(prefix)) continue;
      const rest = key.slice(prefix.length);
      if (rest !== '' && !rest.includes('/')) names.add(rest);
    }
    return [...names].sort();
  }

  private async collect(
    r: Resolved,
    suffix: Rel,
    out: { suffix: Rel; entry: FileEntry | DirEntry }[],
  ): Promise<void> {
    if (r.type === 'file') {
      const e = r.entry;
      if (e?.kind === 'file') {
        out.push({ suffix, entry: { ...e } });
        return;
      }
      this.checkHardLink(r, 'moving it');
      const data = await this.content(r, true);
      this.countBytes(r.input, data.byteLength);
      const hash = await this.putBlob(data);
      const modes = this.modeFields(this.modeOf(r));
      out.push({
        suffix,
        entry: { kind: 'file', op: 'rename', hash, size: data.byteLength, ...modes, base: { type: 'none' } },
      });
      return;
    }
    const e = r.entry;
    const modes =
      e?.kind === 'dir' ? this.modeFields(e.refusedMode ?? e.mode) : this.modeFields(r.real!.mode);
    out.push({
      suffix,
      entry: { kind: 'dir', op: 'rename', ...modes, opaque: true, base: { type: 'none' } },
    });
    for (const name of await this.list(r)) {
      const child = await this.resolve([...r.rel, name], `${r.input}/${name}`);
      await this.collect(child, [...suffix, name], out);
    }
  }
}

function stagedBytesOf(entries: Record<string, Entry>): number {
  let total = 0;
  for (const e of Object.values(entries)) if (e.kind === 'file') total += e.size;
  return total;
}
