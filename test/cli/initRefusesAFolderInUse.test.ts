import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runJbx as jbx } from '../timetravel/replay/jbx';

const work = mkdtempSync(path.join(os.tmpdir(), 'jukebox-init-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Every file and folder under `dir`, relative, with each file's content. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const file = path.join(e.parentPath, e.name);
    out[path.relative(dir, file)] = e.isDirectory() ? '<dir>' : readFileSync(file, 'utf8');
  }
  return out;
}

describe('jbx init', () => {
  it('refuses a folder that holds a project already: exit 1, says what to do, writes nothing', async () => {
    const dir = path.join(work, 'in-use');
    mkdirSync(path.join(dir, 'src'), { recursive: true });
    writeFileSync(path.join(dir, 'src/agent.ts'), 'export const mine = 1;\n');
    writeFileSync(path.join(dir, 'README.md'), '# mine\n');
    writeFileSync(path.join(dir, 'package.json'), '{ "name": "mine" }\n');
    const before = snapshot(dir);

    const r = await jbx(['init', dir]);

    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `jbx: jbx init writes a new project, and ${dir} already holds README.md, src; nothing was written. ` +
        'Run it in an empty folder (one holding only what `npm install jukebox` left there is fine), or give a ' +
        'new one: jbx init DIR\n',
    );
    expect(snapshot(dir)).toEqual(before);
  });

  it('names five of many entries and counts the rest', async () => {
    const dir = path.join(work, 'crowded');
    mkdirSync(dir);
    for (const n of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) writeFileSync(path.join(dir, n), '');

    const r = await jbx(['init', dir, '--json']);

    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${dir} already holds a, b, c, d, e and 2 more; nothing was written.`);
    expect(readdirSync(dir).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  });

  it('takes one folder: two are a usage error (exit 2), nothing written', async () => {
    const a = path.join(work, 'two-a');
    const b = path.join(work, 'two-b');

    const r = await jbx(['init', a, b]);

    expect(r.code).toBe(2);
    expect(r.stderr).toBe('jbx: jbx init takes one folder\nusage: jbx init [DIR] [--json]\n');
    expect(readdirSync(work)).not.toContain('two-a');
    expect(readdirSync(work)).not.toContain('two-b');
  });

  it('refuses a file given as its folder (exit 2), leaving the file as it was', async () => {
    const file = path.join(work, 'a-file');
    writeFileSync(file, 'mine\n');

    const r = await jbx(['init', file]);

    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `jbx: jbx init writes a new project into a folder, and ${file} is a file; nothing was written\n`,
    );
    expect(readFileSync(file, 'utf8')).toBe('mine\n');
  });

  it("scaffolds beside an npm install's leftovers, keeping the package.json's own entries", async () => {
    const dir = path.join(work, 'after-install');
    mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
    writeFileSync(
      path.join(dir, 'package.json'),
      `${JSON.stringify({ name: 'mine', scripts: { test: 'echo mine' }, dependencies: { jukebox: 'file:../jukebox.tgz' } })}\n`,
    );

    const r = await jbx(['init', dir, '--json']);

    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { dir: string; files: string[] };
    expect(report.dir).toBe(dir);
    expect(report.files).toContain('src/agent.ts');
    expect(report.files).toContain('jukebox.config.json');
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('mine');
    expect(pkg.scripts.test).toBe('echo mine');
    expect(pkg.scripts.worker).toBeDefined();
    expect(pkg.dependencies.jukebox).toBe('file:../jukebox.tgz');
    // Run again, the folder now holds a project: refused, and the first scaffold is left as it was.
    const before = snapshot(dir);
    const again = await jbx(['init', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('nothing was written');
    expect(snapshot(dir)).toEqual(before);
  });
});
