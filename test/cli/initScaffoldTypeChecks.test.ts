/**
 * The project `jbx init` writes type-checks with its own tsconfig.json (strict), its `jukebox` imports resolved
 * to this package's entries: a change to a public type that breaks the scaffold (the agent handed to
 * `replayTape`, the gate helpers) fails here, without packing. The packed package's own check is in
 * test/package/installsIntoAnEmptyProject.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { projectTemplate } from '../../src/cli/init/template';

const ROOT = path.resolve(__dirname, '../..');
const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-scaffold-tsc-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const ENTRIES: Record<string, string> = {
  jukebox: 'src/index.ts',
  'jukebox/workflow': 'src/temporal/workflow/index.ts',
  'jukebox/booth': 'src/booth/index.ts',
  'jukebox/tape': 'src/recorder/tape/index.ts',
  'jukebox/testing': 'src/testing/index.ts',
};

function typeCheck(dir: string): string[] {
  const config = ts.readConfigFile(path.join(dir, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, dir);
  const program = ts.createProgram(parsed.fileNames, {
    ...parsed.options,
    paths: Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, [path.join(ROOT, v)]])),
  });
  // The scaffold's own files: this package's sources are checked by the repository's tsc, with its options
  // (the packed package's declarations are what a user's tsc reads, checked by the package test).
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => !d.file || !path.relative(dir, d.file.fileName).startsWith('..'))
    .map(
      (d) =>
        `${d.file ? path.relative(dir, d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
}

describe('the jbx init scaffold', () => {
  it('type-checks with its own tsconfig (tsc --noEmit passes), replayTape taking the typed agent', () => {
    const dir = path.join(work, 'app');
    mkdirSync(dir);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const t = projectTemplate('app', { ...pkg.devDependencies, ...pkg.dependencies, jukebox: '^0.1.0' });
    for (const [rel, content] of Object.entries(t.files)) {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), content);
    }
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true }));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    expect(t.files['test/agent.test.ts']).toContain('replayTape(tape!, { agent: weatherAgent })');
    expect(typeCheck(dir)).toEqual([]);
  });

  it('a type error in the scaffold is reported (the check is not vacuous)', () => {
    const dir = path.join(work, 'broken');
    mkdirSync(path.join(dir, 'src'), { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'broken', private: true }));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, module: 'node16', moduleResolution: 'node16', noEmit: true },
        include: ['src'],
      }),
    );
    writeFileSync(
      path.join(dir, 'src/a.ts'),
      "import { pass } from 'jukebox';\nexport const n: number = pass();\n",
    );
    expect(typeCheck(dir).join('\n')).toMatch(
      /src\/a\.ts: Type 'GateDecision' is not assignable to type 'number'/,
    );
  });
});
