/**
 * Progress on stderr for work that runs longer than a second; nothing for quick work, and nothing on stdout,
 * which belongs to the result. Reading is synchronous, so callers tick it from their loop.
 */
export interface Progress {
  tick(describe: () => string): void;
  done(): void;
}

export function createProgress(label: string, write = (m: string) => process.stderr.write(m)): Progress {
  const started = Date.now();
  let last = 0;
  let shown = false;
  return {
    tick(describe) {
      const now = Date.now();
      if (now - started < 1_000 || now - last < 1_000) return;
      last = now;
      shown = true;
      write(`${label}: ${describe()}\n`);
    },
    done() {
      if (shown) write(`${label}: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    },
  };
}

export const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
