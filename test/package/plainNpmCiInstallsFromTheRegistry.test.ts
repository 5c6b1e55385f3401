import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A contributor's plain `npm ci` installs from the registry alone: npm (11+) runs a dependency's install script
 * only when package.json's allowScripts allows it, and every dependency with one is decided there. The one
 * allowed builds sqlite3; onnxruntime-node's, which would fetch CUDA binaries from outside the registry, is
 * denied (its CPU binaries ship in the package, and the breaker's embedding test loads them).
 */
describe("the repository's own install", () => {
  it('decides every install script of the locked dependencies: only sqlite3 runs one', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.allowScripts).toEqual({
      sqlite3: true,
      'onnxruntime-node': false,
      esbuild: false,
      '@swc/core': false,
      protobufjs: false,
    });
    // npm's own review of the installed tree: nothing would run that package.json has not decided.
    const review = execFileSync('npm', ['install-scripts', 'ls'], { cwd: ROOT, encoding: 'utf8' });
    expect(review.trim()).toBe('No packages with unreviewed install scripts.');
  });

  it('bootstraps with plain npm ci on npm 11 and later, no environment variable', () => {
    const script = readFileSync(path.join(ROOT, 'scripts/bootstrap.sh'), 'utf8');
    expect(script).toMatch(/-ge 11 \]; then\n\s+npm ci --no-audit --no-fund --loglevel=error >&2\n/);
    expect(
      Number(execFileSync('npm', ['--version'], { encoding: 'utf8' }).split('.')[0]),
    ).toBeGreaterThanOrEqual(11);
  });
});
