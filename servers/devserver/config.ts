import path from 'node:path';

export {
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_NAMESPACE,
  DEFAULT_TEMPORAL_UI_PORT,
  splitAddress,
  type TemporalConfig,
  temporalConfigFromEnv,
} from '../../src/temporal/config';

/** The repository root: this file lives in `<root>/devserver`. */
export function defaultProjectRoot(): string {
  return path.resolve(__dirname, '../..');
}

/** Everything Jukebox installs or writes for Temporal lives under `<root>/.jukebox` (git-ignored). */
export function jukeboxPaths(projectRoot = defaultProjectRoot()) {
  const base = path.join(projectRoot, '.jukebox');
  return { binDir: path.join(base, 'bin'), stateDir: path.join(base, 'state') };
}
