import { builtinModules } from 'node:module';
import path from 'node:path';
import { type BundleOptions, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { JukeboxError } from '../../errors';

const silent = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };

/**
 * The workflow interceptors every Jukebox bundle holds (they seal plain workflows' tapes). Compiled by the
 * workflow bundler: the .ts source when Jukebox runs from its sources, the .js in a build.
 */
export const TAPE_OUTCOME_MODULE = path.join(
  __dirname,
  `../workflow/tapeOutcomeInterceptors${path.extname(__filename)}`,
);

/**
 * Workflow code imported a module that cannot run inside Temporal's deterministic sandbox (a Node built-in such
 * as `fs`, or a library that uses one). Names the module and the file that imports it.
 */
export class WorkflowCodeImportsNodeModuleError extends JukeboxError {
  constructor(
    readonly workflowsPath: string,
    readonly imports: { module: string; importedBy: string[] }[],
    cause?: unknown,
  ) {
    const list = imports
      .map(
        (i) =>
          `'${i.module}' (imported by ${i.importedBy.length ? i.importedBy.join(', ') : 'a dependency'})`,
      )
      .join('; ');
    super(
      'WORKFLOW_IMPORTS_NODE_MODULE',
      `The workflows module ${workflowsPath} reaches Node modules that cannot run in a Temporal workflow: ${list}. ` +
        'Workflow code is deterministic orchestration only: import agents and Jukebox from `jukebox/workflow`, ' +
        'move file, network and clock access into tools or activities, and import activity types with `import type`.',
      { cause, nonRetryable: true },
    );
  }
}

/** The options of one bundling; `workflowsPath` is required, the rest passes through to Temporal's bundler. */
export type WorkflowBundleOptions = Omit<BundleOptions, 'logger'>;

/**
 * Bundles a workflows module as a Jukebox worker does (with TAPE_OUTCOME_MODULE among its interceptor modules),
 * once, without webpack's report on the terminal. Workers given the bundle skip the seconds of bundling at
 * start-up (tests and benchmarks start many), the recorder hashes it for the tape, and a code check that bundles
 * the same module gets the same hash.
 * A workflows module that reaches a Node built-in fails with WorkflowCodeImportsNodeModuleError, which names
 * the file importing it (Temporal's own message names only the module).
 */
export async function bundleAgentWorkflows(
  options: string | WorkflowBundleOptions,
): Promise<WorkflowBundleWithSourceMap> {
  const given = typeof options === 'string' ? { workflowsPath: options } : options;
  const modules = given.workflowInterceptorModules ?? [];
  const bundleOptions = {
    ...given,
    workflowInterceptorModules: modules.includes(TAPE_OUTCOME_MODULE)
      ? modules
      : [...modules, TAPE_OUTCOME_MODULE],
  };
  const issuers = new Map<string, Set<string>>();
  const hook = bundleOptions.webpackConfigHook;
  try {
    return await bundleWorkflowCode({
      ...bundleOptions,
      logger: silent,
      webpackConfigHook: (config) => {
        const temporalExternals = config.externals;
        config.externals = [
          ({ request, contextInfo }: { request?: string; contextInfo?: { issuer?: string } }, callback) => {
            const issuer = contextInfo?.issuer;
            if (request && issuer && isNodeBuiltin(request, bundleOptions.ignoreModules ?? [])) {
              const name = request.replace(/^node:/, '');
              if (!issuers.has(name)) issuers.set(name, new Set());
              issuers.get(name)!.add(path.relative(process.cwd(), issuer) || issuer);
            }
            callback();
          },
          ...(Array.isArray(temporalExternals)
            ? temporalExternals
            : temporalExternals
              ? [temporalExternals]
              : []),
        ];
        return hook ? hook(config) : config;
      },
    });
  } catch (err) {
    // Temporal's bundler names a disallowed module (`fs`) but not who imports it, and fails with only "Webpack
    // finished with errors" for a `node:` import; the issuers seen on the way name both.
    if (issuers.size === 0) throw err;
    throw new WorkflowCodeImportsNodeModuleError(
      bundleOptions.workflowsPath,
      [...issuers].map(([module, by]) => ({ module, importedBy: [...by].sort() })),
      err,
    );
  }
}

// The few built-ins Temporal's sandbox provides itself (its bundler's allowedBuiltinModules).
const SANDBOX_BUILTINS = new Set(['assert', 'url', 'util']);
const BUILTINS = new Set(builtinModules.filter((m) => !SANDBOX_BUILTINS.has(m)));

function isNodeBuiltin(request: string, ignored: readonly string[]): boolean {
  const name = request.replace(/^node:/, '');
  const root = name.split('/')[0]!;
  if (ignored.includes(name) || ignored.includes(root) || SANDBOX_BUILTINS.has(root)) return false;
  return request.startsWith('node:') || BUILTINS.has(name) || BUILTINS.has(root);
}
