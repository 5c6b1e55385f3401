/**
 * What a run would stage with today's tools. Offline replay answers every tool step from the tape, so by
 * itself it cannot see a tool whose code now stages something else. Given the project's tools and a booth over a
 * fixture world of its own (a scratch copy: files, database, MCP servers whose calls stay in escrow), each tool
 * step the agent makes is run again in that booth (the agent still gets the recorded answer), and at each commit
 * the change set staged this way is compared with the one the recording's gates judged: a difference is a
 * divergence at the commit step, named by kind (file, sql, mcp) and path or statement. Nothing is ever committed:
 * the scratch booth is discarded at every commit and rollback.
 *
 * Tools run here with their real code: list only tools that reach the world through the booth (files, SQL, MCP
 * in escrow). A tool that calls a service directly would call it from the replay too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ToolDefinition } from '../../agent/tools/toolRegistry';
import type { BoothRuntime, ShadowBoothConfig } from '../../booth/shadowBooth';
import type { BoothChangeSet } from '../../booth/verifiers';
import type { BoothStep } from './boothSteps';
import type { Divergence } from './errors';

/** A fixture world for the booth: called with a fresh scratch folder, returns the booth over a copy in it. */
export type ReplayWorld = (dir: string) => ShadowBoothConfig | Promise<ShadowBoothConfig>;

/** One staged change as compared: what a tool's code decides, not what the world it ran against holds. */
type Entry = Record<string, unknown>;

/** The changed lines of a unified diff (headers and context dropped: they depend on the file's other lines). */
function changedLines(diff: string | undefined): string[] | undefined {
  if (diff === undefined) return undefined;
  return diff
    .split('\n')
    .filter((l) => (l.startsWith('+') || l.startsWith('-')) && !l.startsWith('+++') && !l.startsWith('---'));
}

/** The comparable form of a change set: files by path, SQL writes and MCP calls in order. */
export function stagedEntries(c: BoothChangeSet): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const f of c.files) {
    const lines = changedLines(f.diff);
    out.set(`file ${f.path}`, {
      op: f.op,
      ...(f.from !== undefined ? { from: f.from } : {}),
      ...(lines ? { lines } : { after: f.after.type }),
    });
  }
  const sql = (
    (c.sql as { statements?: { kind?: string; statement: string; params: unknown }[] } | null)?.statements ??
    []
  ).filter((s) => s.kind !== 'read');
  sql.forEach((s, i) => {
    out.set(`sql[${i}] ${s.statement}`, { statement: s.statement, params: s.params });
  });
  c.mcp.forEach((m, i) => {
    out.set(`mcp[${i}] ${m.server}/${m.tool}`, { server: m.server, tool: m.tool, arguments: m.arguments });
  });
  return out;
}

/** Where the change set staged now differs from the recorded one, as a divergence at the commit step. */
export function stagedDivergence(b: BoothStep, actual: BoothChangeSet): Divergence | null {
  if (!b.changes) return null;
  const exp = stagedEntries(b.changes);
  const act = stagedEntries(actual);
  const fields: string[] = [];
  const expected: Record<string, unknown> = {};
  const actualOut: Record<string, unknown> = {};
  for (const key of new Set([...exp.keys(), ...act.keys()])) {
    const e = exp.get(key);
    const a = act.get(key);
    if (JSON.stringify(e) === JSON.stringify(a)) continue;
    fields.push(key);
    expected[key] = e ?? null;
    actualOut[key] = a ?? null;
  }
  if (!fields.length) return null;
  return {
    step: b.step,
    frame: b.changesFrame ?? b.requestFrame,
    kind: 'commit.staged',
    fields,
    expected,
    actual: actualOut,
  };
}

/**
 * The scratch booth a replay stages in. `run` names the recorded run: the booth's run key (tools use it in
 * idempotency ids, e.g. the accounting notification id) is then the one the recording had.
 */
// The booth (knex, MCP clients) loads only for a replay that stages again, not for every offline replay.
// `require` under tsx and in the built package; hosts whose require cannot load TypeScript (vitest) take import().
type BoothModule = typeof import('../../booth/shadowBooth');
async function loadBooth(): Promise<BoothModule> {
  try {
    return require('../../booth/shadowBooth') as BoothModule;
  } catch {
    return await import('../../booth/shadowBooth');
  }
}

export class Restaging {
  private step = 0;

  private constructor(
    private readonly runtime: BoothRuntime,
    private readonly tools: Map<string, ToolDefinition>,
    private readonly run: { workflowId: string; runId: string },
    private readonly scratch: string,
  ) {}

  static async open(
    tools: readonly ToolDefinition[],
    world: ReplayWorld,
    run: { workflowId: string; runId: string },
  ): Promise<Restaging> {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'jbx-restage-'));
    try {
      const config = await world(path.join(scratch, 'world'));
      const { BoothRuntime } = await loadBooth();
      const runtime = new BoothRuntime({ ...config, stagingRoot: path.join(scratch, 'staging') });
      return new Restaging(runtime, new Map(tools.map((t) => [t.spec.name, t])), run, scratch);
    } catch (err) {
      rmSync(scratch, { recursive: true, force: true });
      throw err;
    }
  }

  /** Whether the project has this tool (one it does not have is answered from the tape only). */
  has(name: string): boolean {
    return this.tools.has(name);
  }

  /** Runs the tool's code in the scratch booth; returns its error message when it failed, else null. */
  async toolStep(name: string, args: Record<string, unknown>): Promise<string | null> {
    const tool = this.tools.get(name);
    if (!tool) return null;
    const opened = await this.runtime.openStep(this.run.workflowId, this.run.runId, {
      id: `replay-${this.step++}`,
      attempt: 1,
    });
    try {
      const out = await tool.run(structuredClone(args), {
        signal: new AbortController().signal,
        booth: opened.booth,
      });
      await opened.booth.completeStep(out === undefined ? null : out, { flushTape: false });
      return null;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    } finally {
      await opened.booth.close();
    }
  }

  /** What the tools staged since the last commit or rollback. */
  async changeSet(): Promise<BoothChangeSet> {
    const booth = await this.runtime.open(this.run.workflowId, this.run.runId);
    try {
      return await booth.changeSet();
    } finally {
      await booth.close();
    }
  }

  /** A commit or rollback settled the staging: discard it (nothing is ever committed). */
  async settle(): Promise<void> {
    const booth = await this.runtime.open(this.run.workflowId, this.run.runId);
    try {
      await booth.discard();
    } finally {
      await booth.close();
    }
  }

  async close(): Promise<void> {
    try {
      await this.runtime.close();
    } finally {
      rmSync(this.scratch, { recursive: true, force: true });
    }
  }
}
