/**
 * The experiment's progress on stderr: a bar redrawn in place on a terminal; on a pipe or a file, one line
 * when a second has passed since the last, and the last line always.
 */
import type { ExperimentProgress } from '../../temporal';

export function experimentProgress(stream: NodeJS.WriteStream = process.stderr) {
  const tty = stream.isTTY === true;
  let last = 0;
  let pending: ExperimentProgress | undefined;
  let diverged = 0;
  let shown = false;
  const line = (p: ExperimentProgress) => {
    const width = 30;
    const filled = p.total ? Math.round((p.finished / p.total) * width) : width;
    return `experiment ${p.id} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${p.finished}/${p.total} runs, ${p.running} running, ${diverged} diverged${p.resumed ? `, ${p.resumed} resumed` : ''}`;
  };
  const write = (p: ExperimentProgress) => {
    shown = true;
    stream.write(tty ? `\r${line(p)}` : `${line(p)}\n`);
  };
  return {
    update(p: ExperimentProgress) {
      if (p.last?.diverged) diverged++;
      pending = p;
      const now = Date.now();
      if (tty ? now - last < 100 : now - last < 1_000) return;
      last = now;
      write(p);
      pending = undefined;
    },
    done() {
      if (pending) write(pending);
      if (tty && shown) stream.write('\n');
    },
  };
}
