/**
 * What installing `jukebox` costs on disk, dependency by dependency (README, "Use it in your project").
 *
 * The dependency graph is package-lock.json's, resolved as Node resolves it (the nearest `node_modules/NAME`
 * up from the dependent), and each package's size is the bytes of its installed files in this checkout's
 * node_modules, its own nested node_modules left out (they are packages of their own). What a user's
 * `npm install jukebox` gets is the closure of `dependencies`; the optional peers only when they install them.
 *
 * The peer is what a plain Temporal TypeScript worker installs: the closure of @temporalio/client, worker,
 * workflow and activity, measured the same way from the same tree. Per dependency, the row is what leaving it
 * out would save (the packages only it brings in) against its whole closure (shared packages included).
 *
 * The package itself is measured as `npm pack` makes it from this checkout's dist/ (built by `npm run bench`
 * first): the tarball's bytes against what it unpacks to.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type BenchResult, type BenchSuite, result } from '../harness';

const ROOT = path.join(__dirname, '../..');
const MB = 1024 * 1024;
const packages = (n: number) => `${n} package${n === 1 ? '' : 's'}`;

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** Bytes of the files under a package folder, its nested node_modules left out. */
function folderBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules') continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += folderBytes(p);
    else total += lstatSync(p).size;
  }
  return total;
}

class InstallGraph {
  private readonly sizes = new Map<string, number>();
  constructor(private readonly packages: Record<string, LockEntry>) {}

  /** The lock key a dependency `name` of the package at `from` resolves to, as Node's lookup finds it. */
  resolve(from: string, name: string): string | undefined {
    let base = from;
    for (;;) {
      const key = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
      if (this.packages[key]) return key;
      if (!base) return undefined;
      const i = base.lastIndexOf('/node_modules/');
      base = i < 0 ? '' : base.slice(0, i);
    }
  }

  /** Every package installing `roots` brings (required dependencies, optional ones that are installed, required peers). */
  closure(roots: Iterable<string>): Set<string> {
    const seen = new Set<string>();
    const stack = [...roots];
    while (stack.length) {
      const key = stack.pop()!;
      if (seen.has(key)) continue;
      seen.add(key);
      const e = this.packages[key]!;
      const names = [
        ...Object.keys(e.dependencies ?? {}),
        ...Object.keys(e.optionalDependencies ?? {}),
        ...Object.keys(e.peerDependencies ?? {}).filter((n) => !e.peerDependenciesMeta?.[n]?.optional),
      ];
      for (const n of names) {
        const to = this.resolve(key, n);
        if (to) stack.push(to);
      }
    }
    return seen;
  }

  bytes(keys: Iterable<string>): number {
    let total = 0;
    for (const k of keys) {
      let s = this.sizes.get(k);
      if (s === undefined) {
        try {
          s = folderBytes(path.join(ROOT, k));
        } catch {
          s = 0; // an optional package of another platform: in the lock, not on this disk
        }
        this.sizes.set(k, s);
      }
      total += s;
    }
    return total;
  }
}

export const installSizeSuite: BenchSuite = {
  name: 'installSize',
  breaker: 'not involved: this suite runs no agent',
  async run(): Promise<BenchResult[]> {
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, LockEntry>;
    };
    const graph = new InstallGraph(lock.packages);
    const root = lock.packages['']!;
    const direct = Object.keys(root.dependencies ?? {}).sort();
    const resolved = (names: string[]) =>
      names.map((n) => {
        const k = graph.resolve('', n);
        if (!k) throw new Error(`package-lock.json has no ${n}: run npm ci first`);
        return k;
      });
    const all = graph.closure(resolved(direct));
    const temporal = graph.closure(
      resolved(['@temporalio/client', '@temporalio/worker', '@temporalio/workflow', '@temporalio/activity']),
    );
    const total = graph.bytes(all);
    const rows: BenchResult[] = [
      result(
        `npm install jukebox: its dependencies' installed files (${all.size} packages)`,
        total / MB,
        'MiB',
        `a plain Temporal worker's (client, worker, workflow, activity: ${temporal.size} packages)`,
        graph.bytes(temporal) / MB,
        'the package itself comes on top: see the npm pack tarball row',
      ),
    ];
    const perDep = direct.map((name) => {
      const others = graph.closure(resolved(direct.filter((n) => n !== name)));
      const only = [...all].filter((k) => !others.has(k));
      const own = graph.closure(resolved([name]));
      return { name, only, saved: graph.bytes(only), own };
    });
    perDep.sort((a, b) => b.saved - a.saved);
    for (const d of perDep)
      rows.push(
        result(
          `dependency ${d.name}: what leaving it out saves`,
          d.saved / MB,
          'MiB',
          'its whole closure, shared packages included',
          graph.bytes(d.own) / MB,
          `${packages(d.only.length)} only it brings in; ${packages(d.own.size)} in its closure`,
        ),
      );
    for (const name of Object.keys(root.peerDependencies ?? {}).sort()) {
      const key = graph.resolve('', name);
      if (!key) continue;
      const added = [...graph.closure([key])].filter((k) => !all.has(k));
      rows.push(
        result(
          `optional peer ${name}: what installing it adds`,
          graph.bytes(added) / MB,
          'MiB',
          "jukebox's dependencies",
          total / MB,
          `${packages(added.length)}; installed only by a user who needs it`,
        ),
      );
    }
    rows.push(tarballRow());
    return rows;
  },
};

/** `npm pack --dry-run` of the built package: the tarball npm would publish, without writing it. */
function tarballRow(): BenchResult {
  // --ignore-scripts: measure the dist/ the bench run built, not a second build by prepack.
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [pack] = JSON.parse(out) as { size: number; unpackedSize: number; entryCount: number }[];
  if (!pack) throw new Error('npm pack --dry-run --json printed no package');
  return result(
    `npm pack tarball: jukebox itself (${pack.entryCount} files, ${pack.size.toLocaleString('en-US')} bytes)`,
    pack.size / 1024,
    'KiB',
    'the files it unpacks to (dist/, docs/, bench/RESULTS.md)',
    pack.unpackedSize / 1024,
    'what npm install downloads for jukebox before its dependencies',
  );
}
