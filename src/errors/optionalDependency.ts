/**
 * Heavy parts of Jukebox that not every application uses are optional peer dependencies of the package: they
 * are loaded when the feature that needs them is first used, and a missing one is this error, which names the
 * package to install (with the version range the package declares) instead of a bare MODULE_NOT_FOUND.
 */
import { crossRealmError, JukeboxError } from './JukeboxError';

/**
 * The optional peers and the ranges package.json declares for them (a test keeps the two equal). An entry
 * here is loaded only through `requireOptional`.
 */
export const OPTIONAL_DEPENDENCIES = {
  'onnxruntime-node': '^1.30.0',
  sqlite3: '^6.0.1',
  pg: '^8.23.1',
  typescript: '^5.9.3',
  '@ai-sdk/openai': '^3.0.141',
  '@anthropic-ai/sdk': '^1.16.0',
  '@modelcontextprotocol/sdk': '^1.32.2',
  '@aws-sdk/client-s3': '^3.1175.0',
  '@opentelemetry/exporter-metrics-otlp-http': '^0.57.2',
  '@opentelemetry/exporter-trace-otlp-http': '^0.57.2',
  '@opentelemetry/resources': '^1.30.1',
  '@opentelemetry/sdk-metrics': '^1.30.1',
  '@opentelemetry/sdk-trace-base': '^1.30.1',
} as const;

export type OptionalDependency = keyof typeof OPTIONAL_DEPENDENCIES;

export class OptionalDependencyMissingError extends JukeboxError {
  constructor(
    readonly dependency: OptionalDependency,
    readonly feature: string,
    cause?: unknown,
  ) {
    super(
      'OPTIONAL_DEPENDENCY_MISSING',
      `${feature} needs the package ${dependency}, which is not installed. Install it next to jukebox: ` +
        `npm install ${dependency}@${OPTIONAL_DEPENDENCIES[dependency]}`,
      { cause, nonRetryable: true },
    );
  }
}
crossRealmError('OptionalDependencyMissingError', OptionalDependencyMissingError);

/** True when the error says `dependency` itself (not something it requires) could not be found. */
function isMissing(err: unknown, dependency: string): boolean {
  const e = err as NodeJS.ErrnoException;
  return (
    e?.code === 'MODULE_NOT_FOUND' &&
    new RegExp(`'${dependency}(/[^']*)?'`).test(e.message.split('\n')[0] ?? '')
  );
}

/**
 * `require(dependency)` (or a file of it, `subpath` such as `/client/index.js`), or OptionalDependencyMissingError
 * naming it and the feature that needs it.
 */
export function requireOptional<T>(dependency: OptionalDependency, feature: string, subpath = ''): T {
  try {
    return require(`${dependency}${subpath}`) as T;
  } catch (err) {
    if (isMissing(err, dependency)) throw new OptionalDependencyMissingError(dependency, feature, err);
    throw err;
  }
}

/** `require.resolve(dependency)`, or OptionalDependencyMissingError (for packages loaded in another thread). */
export function resolveOptional(dependency: OptionalDependency, feature: string): string {
  try {
    return require.resolve(dependency);
  } catch (err) {
    if (isMissing(err, dependency)) throw new OptionalDependencyMissingError(dependency, feature, err);
    throw err;
  }
}
