/**
 * Finds the agent code a tape was recorded from: the configured agent modules are loaded and the
 * AgentDefinition whose name is the header's workflowType is picked. The code hash is checked separately
 * (codeCheck.ts): a changed agent is replayed anyway, and the divergence audit shows what the change did.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { AgentDefinition } from '../../agent/context';
import type { ToolDefinition } from '../../agent/tools/toolRegistry';
import type { Gate } from '../../booth/verifiers';
import { AgentCodeNotFoundError, ProjectConfigError } from './errors';
import type { ProjectConfig } from './projectConfig';
import type { ReplayWorld } from './restaging';

/** An AgentDefinition among a module's exports: a named object with a `run` function. */
export function isAgent(v: unknown): v is AgentDefinition<unknown, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { name?: unknown }).name === 'string' &&
    typeof (v as { run?: unknown }).run === 'function'
  );
}

/**
 * TypeScript agent modules load through the project's own tsx (a dev dependency of the projects `jbx init`
 * writes): the built jbx is plain JavaScript and registers it only when a module needs it.
 */
function registerTypeScript(module: string): void {
  let loader: string;
  try {
    loader = require.resolve('tsx/cjs', { paths: [path.dirname(module), process.cwd()] });
  } catch (err) {
    throw new ProjectConfigError(
      module,
      'is TypeScript, and no tsx is installed to load it; add it to the project (npm install --save-dev tsx) ' +
        'or point jukebox.config.json at compiled JavaScript',
      err,
    );
  }
  require(loader);
}

/**
 * `require` first: with a TypeScript loader registered (tsx) it loads TypeScript, and a native `import()` of a
 * .ts file would not. Hosts without a TypeScript-aware require (vitest) load it through their own `import()`;
 * plain Node, through the project's tsx.
 */
async function load(module: string): Promise<Record<string, unknown>> {
  try {
    return require(module) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') throw err;
    try {
      return (await import(module)) as Record<string, unknown>;
    } catch (importErr) {
      // Plain Node (the built jbx) loads no TypeScript: register the project's tsx and load it once more.
      if (!/\.[cm]?tsx?$/.test(module) || require.extensions['.ts']) throw importErr;
      registerTypeScript(module);
      return require(module) as Record<string, unknown>;
    }
  }
}

export interface LocatedAgent {
  agent: AgentDefinition<unknown, unknown>;
  module: string;
}

export async function locateAgent(workflowType: string, config: ProjectConfig): Promise<LocatedAgent> {
  const found: string[] = [];
  for (const module of config.agents) {
    if (!existsSync(module)) continue;
    let exports: Record<string, unknown>;
    try {
      exports = await load(module);
    } catch (err) {
      throw new AgentCodeNotFoundError(
        workflowType,
        [`${module} (failed to load: ${(err as Error).message})`],
        found,
        err,
      );
    }
    // An ES import of a CommonJS module puts its exports under `default`; look at both.
    const d = exports.default;
    const values = [...Object.values(exports), ...(d && typeof d === 'object' ? Object.values(d) : [])];
    for (const value of values) {
      if (!isAgent(value)) continue;
      if (value.name === workflowType) return { agent: value, module };
      found.push(value.name);
    }
  }
  throw new AgentCodeNotFoundError(workflowType, config.agents, [...new Set(found)]);
}

function isGateRecord(v: unknown): v is Record<string, Gate> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((g) => typeof g === 'function')
  );
}

/**
 * The project's Shadow Booth gates by name, from the `gates` export of each configured gates module (the same
 * object a worker passes as `booth.gates`); undefined when the configuration names none.
 */
export async function loadGates(config: ProjectConfig): Promise<Record<string, Gate> | undefined> {
  if (config.gates.length === 0) return undefined;
  const out: Record<string, Gate> = {};
  for (const module of config.gates) {
    if (!existsSync(module))
      throw new ProjectConfigError(config.source, `the gates module ${module} does not exist; fix "gates"`);
    let exports: Record<string, unknown>;
    try {
      exports = await load(module);
    } catch (err) {
      throw new ProjectConfigError(
        config.source,
        `the gates module ${module} failed to load: ${(err as Error).message}`,
        err,
      );
    }
    const d = exports.default as Record<string, unknown> | undefined;
    const gates = exports.gates ?? (d && typeof d === 'object' ? d.gates : undefined);
    if (!isGateRecord(gates))
      throw new ProjectConfigError(
        config.source,
        `${module} exports no \`gates\`: export the worker's booth gates by name, e.g. \`export const gates = { 'refund-threshold': refundGate() }\``,
      );
    Object.assign(out, gates);
  }
  return out;
}

function isTool(v: unknown): v is ToolDefinition {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as ToolDefinition).run === 'function' &&
    typeof (v as ToolDefinition).spec?.name === 'string'
  );
}

async function loadModule(
  config: ProjectConfig,
  key: string,
  module: string,
): Promise<Record<string, unknown>> {
  if (!existsSync(module))
    throw new ProjectConfigError(config.source, `the ${key} module ${module} does not exist; fix "${key}"`);
  try {
    return await load(module);
  } catch (err) {
    throw new ProjectConfigError(
      config.source,
      `the ${key} module ${module} failed to load: ${(err as Error).message}`,
      err,
    );
  }
}

/**
 * What restaging needs from the project (restaging.ts): its tools (every ToolDefinition, or list of them, its
 * `tools` modules export) and its `booth` module's `replayWorld`; undefined unless the configuration names both.
 */
export async function loadRestaging(
  config: ProjectConfig,
): Promise<{ tools: ToolDefinition[]; world: ReplayWorld } | undefined> {
  if (config.tools.length === 0 || config.booth === null) return undefined;
  const tools = new Map<string, ToolDefinition>();
  for (const module of config.tools) {
    const exports = await loadModule(config, 'tools', module);
    for (const v of Object.values(exports))
      for (const t of Array.isArray(v) ? v : [v]) if (isTool(t)) tools.set(t.spec.name, t);
  }
  const world = (await loadModule(config, 'booth', config.booth)).replayWorld;
  if (typeof world !== 'function')
    throw new ProjectConfigError(
      config.source,
      `${config.booth} exports no replayWorld(dir): export a function that builds a fixture world in dir and returns the booth configuration over it`,
    );
  return { tools: [...tools.values()], world: world as ReplayWorld };
}
