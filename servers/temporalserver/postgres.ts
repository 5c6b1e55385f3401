/**
 * A PostgreSQL cluster for the Temporal server, from the Debian `postgresql` package (scripts/system-deps.sh):
 * initdb on first use into `.jukebox/state/postgres-<port>/`, started with pg_ctl on 127.0.0.1, trust auth.
 * A cluster already running there is reused. PostgreSQL refuses to run as root, so as root its programs run
 * as the `postgres` user the package creates.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PostgresClusterError } from './errors';

export interface PostgresCluster {
  host: string;
  port: number;
  user: string;
  dataDir: string;
  logFile: string;
  /** True when this call started it (stop() then stops it); false when it was already running. */
  started: boolean;
  stop(): void;
}

/** The newest installed PostgreSQL's bin folder, or an error that says how to install one. */
export function postgresBinDir(): string {
  const base = '/usr/lib/postgresql';
  if (fs.existsSync(base)) {
    const versions = fs
      .readdirSync(base)
      .filter((v) => fs.existsSync(path.join(base, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return path.join(base, versions[0]!, 'bin');
  }
  const found = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  if (found !== '') return path.dirname(found);
  throw new PostgresClusterError('PostgreSQL is not installed (no initdb found)');
}

export function ensurePostgres(options: { stateDir: string; port: number; log: (m: string) => void }) {
  const bin = postgresBinDir();
  const asRoot = process.getuid?.() === 0;
  const dir = path.join(options.stateDir, `postgres-${options.port}`);
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'postgres.log');
  const run = (cmd: string, args: string[]) => {
    const argv = asRoot
      ? ['runuser', '-u', 'postgres', '--', path.join(bin, cmd), ...args]
      : [path.join(bin, cmd), ...args];
    return spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  };
  fs.mkdirSync(dir, { recursive: true });
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    fs.chownSync(dir, uid, gid);
  }
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    options.log(`creating a PostgreSQL cluster in ${dataDir}`);
    fs.rmSync(dataDir, { recursive: true, force: true });
    const r = run('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    if (r.status !== 0) throw new PostgresClusterError(`initdb failed: ${(r.stderr || r.stdout).trim()}`);
  }
  const status = run('pg_ctl', ['-D', dataDir, 'status']);
  let started = false;
  if (status.status !== 0) {
    options.log(`starting PostgreSQL on 127.0.0.1:${options.port}`);
    const r = run('pg_ctl', [
      '-D',
      dataDir,
      '-l',
      logFile,
      '-w',
      '-t',
      '60',
      '-o',
      // fsync off: a test cluster that a crash may lose; the data is recreated by the next start.
      `-h 127.0.0.1 -p ${options.port} -k ${dir} -c fsync=off -c max_connections=200`,
      'start',
    ]);
    if (r.status !== 0)
      throw new PostgresClusterError(
        `PostgreSQL did not start on 127.0.0.1:${options.port}: ${(r.stderr || r.stdout).trim()}`,
        logFile,
      );
    started = true;
  }
  const cluster: PostgresCluster = {
    host: '127.0.0.1',
    port: options.port,
    user: 'postgres',
    dataDir,
    logFile,
    started,
    stop() {
      run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
    },
  };
  return cluster;
}

/** Stops the cluster of `port` under `stateDir` if it runs; true when it did. */
export function stopPostgres(stateDir: string, port: number): boolean {
  const dataDir = path.join(stateDir, `postgres-${port}`, 'data');
  if (!fs.existsSync(dataDir)) return false;
  const bin = postgresBinDir();
  const asRoot = process.getuid?.() === 0;
  const args = ['-D', dataDir, '-m', 'fast', '-w', 'stop'];
  const argv = asRoot
    ? ['runuser', '-u', 'postgres', '--', path.join(bin, 'pg_ctl'), ...args]
    : [path.join(bin, 'pg_ctl'), ...args];
  return spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' }).status === 0;
}
