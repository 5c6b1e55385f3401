import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleAgentWorkflows } from '../../../src/temporal';
import { codeCacheDir } from '../../../src/timetravel/bundle/codeCache';

const WORKFLOWS = path.join(__dirname, '../../../examples/workflows.ts');
const EVALUATE = path.join(__dirname, 'fixtures/evaluateBundle.ts');
const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-code-cache-'));
const bundleFile = path.join(work, 'workflow-bundle.js');
let cacheFile: string;

beforeAll(async () => {
  const code = (await bundleAgentWorkflows(WORKFLOWS)).code;
  writeFileSync(bundleFile, code);
  const key = createHash('sha256').update(code).digest('hex');
  cacheFile = `${key}-${process.versions.v8}-${process.arch}.bin`;
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Evaluates the bundle as replay does, in a fresh process: the cache's status and the agents found. */
function evaluate(cacheDir: string): { status: string; agents: string[] } {
  const out = execFileSync(process.execPath, ['--import', 'tsx', EVALUATE, bundleFile], {
    encoding: 'utf8',
    env: { ...process.env, JUKEBOX_CODE_CACHE_DIR: cacheDir },
  });
  return JSON.parse(out);
}

/** The agents examples/workflows.ts exports. */
const AGENTS = ['accountingAgent', 'pageAgent', 'researchAgent'];

describe('the code cache of evaluated workflow bundles', () => {
  it('is written on first use, then used: the same agents either way', () => {
    const dir = path.join(work, 'fresh');
    expect(evaluate(dir)).toEqual({ status: 'miss', agents: AGENTS });
    expect(readdirSync(dir)).toEqual([cacheFile]);
    expect(statSync(path.join(dir, cacheFile)).size).toBeGreaterThan(100_000);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dir, cacheFile)).mode & 0o777).toBe(0o600);
    expect(evaluate(dir)).toEqual({ status: 'hit', agents: AGENTS });
  });

  it('replaces data V8 rejects (damaged, or made by another V8) and still evaluates the code', () => {
    const dir = path.join(work, 'damaged');
    evaluate(dir);
    const file = path.join(dir, cacheFile);
    writeFileSync(file, Buffer.alloc(statSync(file).size, 7));
    expect(evaluate(dir)).toEqual({ status: 'rejected', agents: AGENTS });
    expect(evaluate(dir)).toEqual({ status: 'hit', agents: AGENTS });
    expect(readdirSync(dir)).toEqual([cacheFile]);
  });

  it('never fails a replay: a folder that cannot be made means no cache', () => {
    const blocker = path.join(work, 'a-file');
    writeFileSync(blocker, '');
    expect(evaluate(path.join(blocker, 'v8'))).toEqual({ status: 'miss', agents: AGENTS });
    expect(evaluate(path.join(blocker, 'v8')).status).toBe('miss');
    expect(readFileSync(blocker, 'utf8')).toBe('');
  });

  it('is off with JUKEBOX_CODE_CACHE_DIR=off, and per user by default', () => {
    expect(evaluate('off')).toEqual({ status: 'off', agents: AGENTS });
    expect(codeCacheDir({ JUKEBOX_CODE_CACHE_DIR: 'off' })).toBeNull();
    expect(codeCacheDir({ XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/jukebox/v8');
    expect(codeCacheDir({})).toBe(path.join(os.homedir(), '.cache/jukebox/v8'));
  });
});
