/**
 * Every name the shipped docs and the error messages tell a user to call is importable from the package: the
 * names of `import { … } from 'jukebox…'` examples from the entry they are imported from, and every function or
 * class of this package the docs or an error message name as a call (`captureRunHistory(handle, file)`) from one
 * of the public entries. The entries are package.json `exports`, read with the TypeScript checker over src/, so
 * types count as well as values.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { shippedDocs } from './shippedDocs';

const ROOT = path.resolve(__dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string }>;
};

/** `jukebox/x` → the src file its declarations come from. */
const ENTRIES = new Map(
  Object.entries(pkg.exports)
    .filter(([, v]) => typeof v === 'object')
    .map(([k, v]) => [
      k === '.' ? 'jukebox' : `jukebox/${k.slice(2)}`,
      path.join(
        ROOT,
        (v as { types: string }).types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'),
      ),
    ]),
);

/**
 * Names the docs mention as a call that are no part of the public API: the repository's own machinery (setup
 * scripts, the eval's fixtures) and the internals design notes describe, each beside the source file it lives in.
 */
const INTERNAL = new Set([
  // servers/devserver/, used by the repository's tests and scripts (docs/temporal-server.md)
  'ensureTemporalCli',
  'startDevServer',
  'stopDevServer',
  'waitForServer',
  'startJaeger',
  // the eval's held-out set (eval/)
  'heldOutSetHash',
  // design notes of the time-travel internals (docs/time-travel.md), each named with its source file
  'createOfflineContext',
  'findAgentCode',
  'loadProjectConfig',
  'locateAgent',
  'loadGates',
  'replayWorld',
  'restoreWorld',
  // the recorder's and the booth's internals (docs/shadow-booth.md, docs/tape-store.md, docs/circuit-breaker.md)
  'currentActivityTape',
  'boothSaga',
  'compensateApplied',
  'contentStoreFor',
  // a SQL function of the PostgreSQL shadow's checkpoint (docs/shadow-booth.md), not a TypeScript call
  'sha256',
]);

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const SOURCES = walk(path.join(ROOT, 'src'));
const program = ts.createProgram([...ENTRIES.values()], {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  strict: true,
  esModuleInterop: true,
  skipLibCheck: true,
  resolveJsonModule: true,
  noEmit: true,
});
const checker = program.getTypeChecker();

function exportsOf(file: string): Set<string> {
  const source = program.getSourceFile(file);
  if (!source) throw new Error(`${file} is not in the program`);
  const symbol = checker.getSymbolAtLocation(source);
  return new Set(symbol ? checker.getExportsOfModule(symbol).map((s) => s.name) : []);
}
const exported = new Map([...ENTRIES].map(([entry, file]) => [entry, exportsOf(file)]));
const anyEntry = (name: string) => [...exported].filter(([, names]) => names.has(name)).map(([e]) => e);

/** Functions and classes declared as exports anywhere in src/: the names that are this package's to export. */
const OWN = new Set(
  SOURCES.flatMap((f) =>
    [
      ...readFileSync(f, 'utf8').matchAll(
        /^export (?:async )?(?:function\*? |class |const |abstract class )([A-Za-z_]\w*)/gm,
      ),
    ].map((m) => m[1]!),
  ),
);

const CALL = /(?<![.\w])([A-Za-z_]\w*)\(/g;

/** `import { a, type B } from 'jukebox/x'` in the docs' code blocks. */
function importedNames(text: string): { entry: string; name: string }[] {
  const out: { entry: string; name: string }[] = [];
  for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+['"](jukebox(?:\/[\w-]+)?)['"]/g))
    for (const part of m[1]!.split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)[0]!
        .trim();
      if (/^[A-Za-z_]\w*$/.test(name)) out.push({ entry: m[2]!, name });
    }
  return out;
}

/** The names inside backticks that are written as a call: `name(` or `` `name` `` of one of ours. */
function calledInDocs(text: string): Set<string> {
  const names = new Set<string>();
  for (const span of text.matchAll(/`([^`\n]+)`/g)) for (const m of span[1]!.matchAll(CALL)) names.add(m[1]!);
  return names;
}

/** The strings of src/ (error messages, hints), comments left out. */
function calledInMessages(): Map<string, string> {
  const where = new Map<string, string>();
  for (const file of SOURCES) {
    if (file.includes(`${path.sep}cli${path.sep}init${path.sep}`)) continue; // the scaffold's own code
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node) => {
      if (
        ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateHead(node) ||
        ts.isTemplateMiddle(node) ||
        ts.isTemplateTail(node)
      )
        for (const m of node.text.matchAll(CALL))
          if (!where.has(m[1]!)) where.set(m[1]!, path.relative(ROOT, file));
      node.forEachChild(visit);
    };
    visit(source);
  }
  return where;
}

describe('the names the docs and errors tell users to call', () => {
  const docs = shippedDocs(ROOT);

  it('finds the entries and the docs it reads', () => {
    expect([...ENTRIES.keys()].sort()).toEqual([
      'jukebox',
      'jukebox/booth',
      'jukebox/tape',
      'jukebox/testing',
      'jukebox/workflow',
    ]);
    expect(docs).toContain('README.md');
    expect(docs).toContain('docs/approvals.md');
    expect(exported.get('jukebox')!.has('JukeboxPlugin')).toBe(true);
  });

  it('every name of an import example is exported by the entry it is imported from', () => {
    const missing: string[] = [];
    let seen = 0;
    for (const doc of docs)
      for (const { entry, name } of importedNames(readFileSync(path.join(ROOT, doc), 'utf8'))) {
        seen++;
        if (!exported.get(entry)?.has(name)) missing.push(`${doc}: ${name} from '${entry}'`);
      }
    expect(seen).toBeGreaterThan(3);
    expect(missing).toEqual([]);
  });

  it('every function or class of ours the docs name as a call is exported by a public entry', () => {
    const missing: string[] = [];
    for (const doc of docs)
      for (const name of calledInDocs(readFileSync(path.join(ROOT, doc), 'utf8')))
        if (OWN.has(name) && !INTERNAL.has(name) && anyEntry(name).length === 0)
          missing.push(`${doc}: ${name}`);
    expect(missing).toEqual([]);
  });

  it('every function or class of ours an error message names as a call is exported by a public entry', () => {
    const named = calledInMessages();
    expect(named.get('captureRunHistory')).toBeDefined();
    const missing = [...named]
      .filter(([name]) => OWN.has(name) && !INTERNAL.has(name) && anyEntry(name).length === 0)
      .map(([name, file]) => `${file}: ${name}`);
    expect(missing).toEqual([]);
  });

  it('the names the issue found missing are exported where the docs say', () => {
    const top = exported.get('jukebox')!;
    for (const name of [
      'captureRunHistory',
      'approve',
      'reject',
      'listApprovals',
      'waitForApproval',
      'pendingApproval',
      'needsApproval',
      'pass',
      'refuse',
      'listTapes',
      'TapeCatalog',
      'diffTimelines',
    ])
      expect(top.has(name), name).toBe(true);
    for (const name of ['needsApproval', 'pass', 'refuse', 'BoothChangeSet', 'SqlWriteSet', 'Gate'])
      expect(exported.get('jukebox/booth')!.has(name), name).toBe(true);
  });

  it('BoothChangeSet.sql is the SQL write set or null, as docs/shadow-booth.md says', () => {
    const file = program.getSourceFile(ENTRIES.get('jukebox/booth')!)!;
    const symbol = checker
      .getExportsOfModule(checker.getSymbolAtLocation(file)!)
      .find((s) => s.name === 'BoothChangeSet')!;
    const type = checker.getDeclaredTypeOfSymbol(checker.getAliasedSymbol(symbol));
    const sql = type.getProperty('sql')!;
    expect(checker.typeToString(checker.getTypeOfSymbol(sql))).toBe('SqlWriteSet | null');
  });
});
