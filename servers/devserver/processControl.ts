import type { ChildProcess } from 'node:child_process';
import { isAlive } from './fileLock';
import { isZombie } from './stateFiles';

const POLL_MS = 100;

/** SIGTERM, then SIGKILL if the process is still there after `graceMs`; resolves once it is gone. */
export async function terminatePid(pid: number, graceMs = 15_000): Promise<void> {
  if (!signal(pid, 'SIGTERM')) return;
  if (await waitGone(pid, graceMs)) return;
  signal(pid, 'SIGKILL');
  await waitGone(pid, 5_000);
}

/** Sends `sig` to `pid` and waits until it is gone (used for SIGKILL in crash tests). */
export async function killPid(pid: number, sig: NodeJS.Signals, waitMs = 15_000): Promise<void> {
  if (signal(pid, sig)) await waitGone(pid, waitMs);
}

/** Same as terminatePid for a child of this process, waiting on its exit event rather than polling. */
export async function terminateChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (hasExited(child)) return;
  const exited = exitOf(child);
  child.kill('SIGTERM');
  if (await withTimeout(exited, graceMs)) return;
  child.kill('SIGKILL');
  await withTimeout(exited, 5_000);
}

export async function killChild(child: ChildProcess, sig: NodeJS.Signals): Promise<void> {
  if (hasExited(child)) return;
  const exited = exitOf(child);
  child.kill(sig);
  await withTimeout(exited, 15_000);
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (hasExited(child)) resolve();
    else child.once('exit', () => resolve());
  });
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid) && !isZombie(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return true;
}

async function withTimeout(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
