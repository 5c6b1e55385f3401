/**
 * The project `jbx init` writes, laid out in a temporary folder with `jukebox` resolving to this repository's
 * sources (its entries as package.json `exports` name them, pointed at src/*.ts) and every other package to
 * the repository's node_modules: the scaffold's worker and client run with tsx, without building or packing.
 * The packed package's own run is test/package/installsIntoAnEmptyProject.test.ts.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectTemplate } from '../../src/cli/init/template';

const ROOT = path.resolve(__dirname, '../..');

/** Each public entry of the package and the source file it is built from. */
const ENTRIES: Record<string, string> = {
  '.': './src/index.ts',
  './workflow': './src/temporal/workflow/index.ts',
  './booth': './src/booth/index.ts',
  './tape': './src/recorder/tape/index.ts',
  './testing': './src/testing/index.ts',
};

export function scaffoldFromSource(dir: string): void {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const t = projectTemplate('app', { ...pkg.devDependencies, ...pkg.dependencies, jukebox: '^0.1.0' });
  for (const [rel, content] of Object.entries(t.files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), content);
  }
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'app', private: true, scripts: t.scripts }),
  );
  const modules = path.join(dir, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(path.join(ROOT, 'node_modules')))
    if (name !== 'jukebox') symlinkSync(path.join(ROOT, 'node_modules', name), path.join(modules, name));
  const jukebox = path.join(modules, 'jukebox');
  mkdirSync(jukebox);
  writeFileSync(
    path.join(jukebox, 'package.json'),
    JSON.stringify({
      name: 'jukebox',
      version: pkg.version,
      exports: { ...ENTRIES, './package.json': './package.json' },
    }),
  );
  symlinkSync(path.join(ROOT, 'src'), path.join(jukebox, 'src'));
}
