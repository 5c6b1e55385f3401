/**
 * Which code a replay runs, found without configuration: asked for a project (`--against` / `--project`), that
 * project's current modules; otherwise the workflow code that recorded the run, which recording workers keep by
 * its hash (the header's agentCodeHash) in `code/` beside the tapes; otherwise the project in the working folder.
 * When none has the agent, the error says where it looked and what to pass.
 */
import path from 'node:path';
import type { AgentDefinition } from '../../agent/context';
import type { ToolDefinition } from '../../agent/tools/toolRegistry';
import type { Gate } from '../../booth/verifiers';
import { tapeDirFromEnv } from '../../recorder/store';
import { agentsOfWorkflowCode } from '../bundle/bundledAgent';
import { codeDirFor, findWorkflowCode } from '../bundle/codeStore';
import { loadGates, loadRestaging, locateAgent } from './agentLocator';
import { AgentCodeNotFoundError, ReplayCodeMissingError } from './errors';
import { loadProjectConfig, type ProjectConfig } from './projectConfig';
import { type ReplayWorld, Restaging } from './restaging';

export interface AgentCode {
  agent: AgentDefinition<unknown, unknown>;
  /**
   * `stored`: the workflow code that recorded the run, kept by hash beside the tapes (the run's own code);
   * `project`: a project's modules as they are now.
   */
  source: 'stored' | 'project';
  /** The file the agent came from. */
  module: string;
  /** The project (source `project`). */
  config?: ProjectConfig;
  /** The project's gates (source `project`, when its configuration names gates modules). */
  gates?: Readonly<Record<string, Gate>>;
  /** The stored workflow code (source `stored`), e.g. for Temporal's replayer. */
  code?: string;
  /**
   * The project's tools and fixture world (source `project`, when its configuration names `tools` and `booth`):
   * opens a scratch booth to stage the run's tool steps again; the caller closes it.
   */
  restage?: (run: { workflowId: string; runId: string }) => Promise<Restaging>;
}

export interface FindAgentCodeOptions {
  /** A project folder whose current code to replay, instead of the recorded code. */
  project?: string;
  /** Folders of stored workflow code to look in first (default: `code/` beside the tape, then the tape store's). */
  codeDirs?: string[];
}

// A stored bundle is found, checked and evaluated once per process: a folder of tapes shares a few code hashes.
const storedCode = new Map<
  string,
  { code: string; file: string; agents: Map<string, AgentDefinition<unknown, unknown>> } | null
>();
interface Project {
  config: ProjectConfig;
  gates?: Record<string, Gate>;
  restaging?: { tools: ToolDefinition[]; world: ReplayWorld };
}
const projects = new Map<string, Promise<Project>>();

function project(dir: string | undefined) {
  const key = path.resolve(dir ?? process.cwd());
  let p = projects.get(key);
  if (!p) {
    p = (async () => {
      const config = loadProjectConfig(key);
      const gates = await loadGates(config);
      const restaging = await loadRestaging(config);
      return { config, ...(gates ? { gates } : {}), ...(restaging ? { restaging } : {}) };
    })();
    projects.set(key, p);
    p.catch(() => projects.delete(key));
  }
  return p;
}

async function fromProject(workflowType: string, dir: string | undefined): Promise<AgentCode> {
  const { config, gates, restaging } = await project(dir);
  const located = await locateAgent(workflowType, config);
  return {
    agent: located.agent,
    source: 'project',
    module: located.module,
    config,
    ...(gates ? { gates } : {}),
    ...(restaging
      ? {
          restage: (run: { workflowId: string; runId: string }) =>
            Restaging.open(restaging.tools, restaging.world, run),
        }
      : {}),
  };
}

export function storedCodeDirs(tapeFile: string): string[] {
  return [...new Set([codeDirFor(path.dirname(path.resolve(tapeFile))), codeDirFor(tapeDirFromEnv())])];
}

export async function findAgentCode(
  tapeFile: string,
  header: { workflowType: string; agentCodeHash: string },
  options: FindAgentCodeOptions = {},
): Promise<AgentCode> {
  const { workflowType, agentCodeHash } = header;
  if (options.project !== undefined) return fromProject(workflowType, options.project);
  const dirs = options.codeDirs ?? storedCodeDirs(tapeFile);
  // Reading and hashing a stored bundle (a megabyte or two) once per folder and hash, not once per tape.
  const key = `${agentCodeHash}\0${dirs.join('\0')}`;
  let stored = storedCode.get(key);
  if (stored === undefined) {
    const found = findWorkflowCode(dirs, agentCodeHash);
    stored = found ? { ...found, agents: agentsOfWorkflowCode(found.code, workflowType, found.file) } : null;
    storedCode.set(key, stored);
  }
  if (stored) {
    const agent = stored.agents.get(workflowType);
    if (agent) return { agent, source: 'stored', module: stored.file, code: stored.code };
  }
  try {
    return await fromProject(workflowType, undefined);
  } catch (err) {
    if (!(err instanceof AgentCodeNotFoundError)) throw err;
    const { config } = await project(undefined);
    throw new ReplayCodeMissingError(
      tapeFile,
      header,
      {
        storedDirs: dirs,
        ...(stored ? { storedFile: stored.file } : {}),
        project: { source: config.source, searched: err.searched, found: err.found },
      },
      err,
    );
  }
}
