/**
 * `jbx init [DIR]`: scaffolds a runnable Jukebox project (template.ts). DIR (default: the working directory)
 * must be empty, or hold only what `npm install jukebox` left there (package.json, its lockfile,
 * node_modules): an existing package.json gains the scripts and dependencies the project needs, never losing
 * one of its own.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { projectTemplate } from './template';

/** What may already be in the folder: an npm install's leftovers and version control. */
const ALLOWED = new Set(['package.json', 'package-lock.json', 'node_modules', '.git', '.npmrc']);

interface PackageJson {
  name?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [key: string]: unknown;
}

/** The versions this jukebox was built and tested with, for the new project's package.json. */
function knownVersions(): Record<string, string> {
  // Three folders up from src/cli/init or dist/cli/init: the package's own package.json.
  const own = JSON.parse(
    readFileSync(path.join(__dirname, '../../../package.json'), 'utf8'),
  ) as PackageJson & {
    version: string;
  };
  return { ...own.devDependencies, ...own.dependencies, jukebox: `^${own.version}` };
}

function addMissing(
  into: Record<string, string> | undefined,
  entries: Record<string, string>,
): Record<string, string> {
  const out = { ...into };
  for (const [k, v] of Object.entries(entries)) out[k] ??= v;
  return out;
}

const USAGE = 'jbx init [DIR] [--json]';

export const initCommand: CommandSpec = {
  name: 'init',
  usage: USAGE,
  options: { json: { type: 'boolean' } },
  async run({ positionals, out }) {
    if (positionals.length > 1) throw usageError(`jbx init takes one folder\nusage: ${USAGE}`);
    const dir = path.resolve(positionals[0] ?? '.');
    if (existsSync(dir) && !statSync(dir).isDirectory())
      throw usageError(
        `jbx init writes a new project into a folder, and ${dir} is a file; nothing was written`,
      );
    if (existsSync(dir)) {
      const extra = readdirSync(dir)
        .filter((n) => !ALLOWED.has(n))
        .sort();
      if (extra.length)
        throw new ExitError(
          ExitCode.failed,
          `jbx init writes a new project, and ${dir} already holds ${extra.slice(0, 5).join(', ')}` +
            `${extra.length > 5 ? ` and ${extra.length - 5} more` : ''}; nothing was written. Run it in an empty ` +
            'folder (one holding only what `npm install jukebox` left there is fine), or give a new one: jbx init DIR',
        );
    }
    mkdirSync(dir, { recursive: true });
    const pkgFile = path.join(dir, 'package.json');
    const existing = existsSync(pkgFile)
      ? (JSON.parse(readFileSync(pkgFile, 'utf8')) as PackageJson)
      : undefined;
    const name =
      existing?.name ??
      (path
        .basename(dir)
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, '-') ||
        'agent');
    const t = projectTemplate(name, knownVersions());
    const pkg: PackageJson = {
      ...(existing ?? { name, private: true }),
      scripts: addMissing(existing?.scripts, t.scripts),
      dependencies: addMissing(existing?.dependencies, t.dependencies),
      devDependencies: addMissing(existing?.devDependencies, t.devDependencies),
    };
    const written: string[] = [];
    for (const [rel, content] of Object.entries(t.files)) {
      const file = path.join(dir, rel);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, content, { flag: 'wx' });
      written.push(rel);
    }
    writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`);
    written.push('package.json');
    const next = [
      'npm install',
      'temporal server start-dev --namespace jukebox   # or point JUKEBOX_TEMPORAL_ADDRESS at your Temporal',
      'npm run worker                                  # then, in another terminal:',
      'npm start',
      'npx jbx ls && npm test',
    ];
    out.result(
      [
        `a Jukebox project in ${dir}:`,
        ...written.map((f) => `  ${f}`),
        '',
        'next:',
        ...next.map((s) => `  ${s}`),
      ].join('\n'),
      { dir, files: written, next },
    );
  },
};
