import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * The python of the cached venv at .jukebox/venv (scripts/python-venv.sh): built from examples/python/requirements.txt
 * on the first run (about 70 s here, allowed 10 min on a loaded machine), reused while that file is unchanged.
 */
export function pythonVenv(): string {
  return execFileSync('bash', ['scripts/python-venv.sh'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 590_000,
  }).trim();
}

/**
 * Runs examples/python/NAME.py against a base URL, offline-safe settings on, and returns its stdout JSON. Asynchronous:
 * the model server it reaches runs in this very process.
 */
export async function runPythonTask(python: string, name: string, baseURL: string): Promise<unknown> {
  const { stdout: out } = await promisify(execFile)(
    python,
    [path.join(ROOT, 'examples', 'python', `${name}.py`)],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 100_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        JUKEBOX_BASE_URL: baseURL,
        OPENAI_API_KEY: 'sk-jukebox-test',
        CREWAI_DISABLE_TELEMETRY: 'true',
        CREWAI_TRACING_ENABLED: 'false',
        OTEL_SDK_DISABLED: 'true',
        PYTHONUNBUFFERED: '1',
      },
    },
  );
  const last = out.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last);
}
