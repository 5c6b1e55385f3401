import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_TEMPORAL_ADDRESS, jukeboxPaths, splitAddress } from './config';
import { isAlive } from './fileLock';

const DEFAULT_PORT = splitAddress(DEFAULT_TEMPORAL_ADDRESS).port;

/**
 * Files of the dev server for one frontend port. The default port keeps the plain names; other ports get
 * their own, so a second server never shares (and corrupts) the first one's SQLite file.
 */
export function serverStateFiles(projectRoot: string | undefined, port: number) {
  const { stateDir } = jukeboxPaths(projectRoot);
  const base = port === DEFAULT_PORT ? 'temporal' : `temporal-${port}`;
  return {
    stateDir,
    dbFile: path.join(stateDir, `${base}.sqlite`),
    logFile: path.join(stateDir, `${base}.log`),
    pidFile: path.join(stateDir, `${base}.pid`),
  };
}

/** The pid in `pidFile` when that process is still alive and is a Temporal server; else undefined. */
export function readLivePid(pidFile: string): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!isAlive(pid) || isZombie(pid)) return undefined;
  // Pids get reused: only trust one whose command line is a Temporal dev server (checkable on Linux).
  const cmdline = readProc(pid, 'cmdline');
  if (cmdline !== undefined && !cmdline.includes('start-dev')) return undefined;
  return pid;
}

/** A process that exited but was not yet reaped still answers kill(pid, 0); it is gone for our purposes. */
export function isZombie(pid: number): boolean {
  const stat = readProc(pid, 'stat');
  return stat !== undefined && /^\d+ \(.*\) Z/.test(stat);
}

function readProc(pid: number, file: string): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return undefined;
  }
}

/** The last `count` non-empty lines of a file, read from byte `from` on (what this start wrote). */
export function tailFile(file: string, from = 0, count = 30): string[] {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const start = Math.max(from, size - 64 * 1024);
      const buf = Buffer.alloc(Math.max(0, size - start));
      fs.readSync(fd, buf, 0, buf.length, start);
      return buf
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim())
        .slice(-count);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return [];
  }
}

export function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}
