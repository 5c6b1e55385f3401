/**
 * The agent inside a workflow bundle, for offline replay without its source: the bundle (webpack output, as
 * the worker ran it) is evaluated in a fresh V8 context, its workflows module is imported the way Temporal's
 * worker does, and the AgentDefinition named like the tape's workflow type is taken from the loaded modules.
 * Evaluating a bundle runs its code: replay bundles from sources you would run an agent from. Its compilation
 * is cached (codeCache.ts): `npm run bench cli` compares a `jbx replay` process with and without the cache.
 */
import vm from 'node:vm';
import type { AgentDefinition } from '../../agent/context';
import { isAgent } from '../replay/agentLocator';
import { AgentCodeNotFoundError } from '../replay/errors';
import { type CodeCacheStatus, compileWithCache } from './codeCache';

export function agentFromWorkflowCode(
  code: string,
  workflowType: string,
  name = 'workflow-bundle.js',
): AgentDefinition<unknown, unknown> {
  const agents = agentsOfWorkflowCode(code, workflowType, name);
  const agent = agents.get(workflowType);
  if (!agent) throw new AgentCodeNotFoundError(workflowType, [name], [...agents.keys()]);
  return agent;
}

/** Every AgentDefinition a workflow bundle defines, by name (one evaluation of the bundle). */
export function agentsOfWorkflowCode(
  code: string,
  workflowType: string,
  name = 'workflow-bundle.js',
): Map<string, AgentDefinition<unknown, unknown>> {
  return evaluateWorkflowCode(code, workflowType, name).agents;
}

/** One evaluation of a workflow bundle: its agents, and whether its compilation came from the code cache. */
export function evaluateWorkflowCode(
  code: string,
  workflowType: string,
  name = 'workflow-bundle.js',
): { agents: Map<string, AgentDefinition<unknown, unknown>>; codeCache: CodeCacheStatus } {
  const modules: Record<string, { exports?: Record<string, unknown> }> = {};
  const context = vm.createContext({
    // Temporal's bundles keep webpack's module cache on this global; it is how the agent modules are found.
    __webpack_module_cache__: modules,
    console,
    TextEncoder,
    TextDecoder,
    URL,
    URLSearchParams,
    AbortController,
    setTimeout,
    clearTimeout,
    queueMicrotask,
  });
  const compiled = compileWithCache(code, name);
  compiled.script.runInContext(context);
  const temporal = (context as { __TEMPORAL__?: { importWorkflows?: () => unknown } }).__TEMPORAL__;
  if (typeof temporal?.importWorkflows !== 'function')
    throw new AgentCodeNotFoundError(workflowType, [`${name} (not a Temporal workflow bundle)`], []);
  temporal.importWorkflows();
  compiled.save();
  const found = new Map<string, AgentDefinition<unknown, unknown>>();
  for (const m of Object.values(modules))
    for (const value of Object.values(m.exports ?? {}))
      if (isAgent(value) && !found.has(value.name)) found.set(value.name, value);
  return { agents: found, codeCache: compiled.status };
}
