/**
 * Where a project's agent code lives, for replaying and forking tapes: `jukebox.config.json` in the project
 * folder, else the `jukebox` key of its package.json, else the layout `jbx init` writes (src/agent.ts,
 * src/workflows.ts).
 *
 *   { "agents": ["examples/sample/agent.ts"], "workflows": "examples/workflows.ts", "models": ["my-model"],
 *     "gates": ["examples/accounting/gates.ts"] }
 *
 * `agents`: modules exporting AgentDefinitions (defineAgent); the tape header's workflowType picks one by name.
 * `gates`: modules exporting `gates`, the worker's Shadow Booth gates by name; replay judges recorded commits with them.
 * `tools` and `booth`: to stage every tool step again with today's tool code (restaging.ts), modules exporting the
 * worker's ToolDefinitions, and one exporting `replayWorld(dir)`, a booth over a fixture world made in `dir`.
 * `workflows`: the workflows module a worker bundles; its bundle hash is the header's agentCodeHash.
 * `models`: model names accepted by `jbx fork --model` besides the providers' well-known families.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ProjectConfigError } from './errors';

export interface ProjectConfig {
  /** Folder the paths are relative to. */
  root: string;
  /** Where the configuration came from: a file path, or `defaults`. */
  source: string;
  agents: string[];
  workflows: string;
  models: string[];
  gates: string[];
  tools: string[];
  /** The module exporting `replayWorld`, or null. */
  booth: string | null;
}

// The layout `jbx init` writes; a project laid out otherwise says where its modules are.
export const DEFAULT_AGENT_MODULES = ['src/agent.ts'];
export const DEFAULT_WORKFLOWS_MODULE = 'src/workflows.ts';

function fromValue(raw: unknown, root: string, source: string): ProjectConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ProjectConfigError(
      source,
      'the Jukebox configuration must be an object like {"agents": ["path.ts"]}',
    );
  const c = raw as Record<string, unknown>;
  const strings = (key: string, fallback: string[]): string[] => {
    const v = c[key];
    if (v === undefined) return fallback;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x.length === 0))
      throw new ProjectConfigError(source, `"${key}" must be a list of non-empty strings`);
    return v as string[];
  };
  if (c.workflows !== undefined && typeof c.workflows !== 'string')
    throw new ProjectConfigError(source, '"workflows" must be a path string');
  if (c.booth !== undefined && (typeof c.booth !== 'string' || c.booth === ''))
    throw new ProjectConfigError(source, '"booth" must be the path of a module exporting replayWorld(dir)');
  return {
    root,
    source,
    agents: strings('agents', DEFAULT_AGENT_MODULES).map((p) => path.resolve(root, p)),
    workflows: path.resolve(root, (c.workflows as string | undefined) ?? DEFAULT_WORKFLOWS_MODULE),
    models: strings('models', []),
    gates: strings('gates', []).map((p) => path.resolve(root, p)),
    tools: strings('tools', []).map((p) => path.resolve(root, p)),
    booth: typeof c.booth === 'string' ? path.resolve(root, c.booth) : null,
  };
}

export function loadProjectConfig(projectDir = process.cwd()): ProjectConfig {
  const root = path.resolve(projectDir);
  const file = path.join(root, 'jukebox.config.json');
  if (existsSync(file)) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new ProjectConfigError(file, `is not valid JSON (${(err as Error).message}); fix the file`, err);
    }
    return fromValue(raw, root, file);
  }
  const pkg = path.join(root, 'package.json');
  if (existsSync(pkg)) {
    const raw = JSON.parse(readFileSync(pkg, 'utf8')) as { jukebox?: unknown };
    if (raw.jukebox !== undefined) return fromValue(raw.jukebox, root, `${pkg} ("jukebox" key)`);
  }
  // No configuration: the layout `jbx init` writes, in this folder.
  return fromValue({}, root, `defaults (no jukebox.config.json in ${root})`);
}
