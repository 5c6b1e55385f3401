/**
 * A throwaway PostgreSQL cluster for tests: initdb into a temp dir, postgres on 127.0.0.1 on a free port, trust
 * auth, stopped and deleted afterwards. PostgreSQL refuses to run as root, so as root it runs as the `postgres`
 * OS user (which the Debian package creates). Binaries come from /usr/lib/postgresql/<version>/bin or PATH;
 * scripts/system-deps.sh installs them when missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { postgresBinDir } from '../../servers/temporalserver/postgres';

export interface PostgresCluster {
  host: string;
  port: number;
  user: string;
  database: string;
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<PostgresCluster> {
  const bin = postgresBinDir();
  const asRoot = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jbx-pg-'));
  fs.chmodSync(dir, 0o755);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    fs.chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]) => {
    const argv = asRoot
      ? ['runuser', '-u', 'postgres', '--', path.join(bin, cmd), ...args]
      : [path.join(bin, cmd), ...args];
    const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr || r.stdout}`);
  };
  const data = path.join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      run('pg_ctl', [
        '-D',
        data,
        '-l',
        path.join(dir, 'log'),
        '-w',
        '-t',
        '60',
        '-o',
        `-h 127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c max_connections=40`,
        'start',
      ]);
      break;
    } catch (err) {
      if (attempt >= 2) throw err;
    }
  }
  const stop = async () => {
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  return {
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop,
  };
}
