/**
 * A worker process completing tool steps of one run, all at once: each step stages a file in its own layer and
 * appends it to the run's step log (the step checkpoint), like parallel activities on one worker.
 */
import path from 'node:path';
import { StagedWorkspace } from '../../src/booth';

async function main(): Promise<void> {
  const [root, stagingDir, layersDir, tag, count, startAt] = process.argv.slice(2) as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const steps = Array.from({ length: Number(count) }, (_, i) => `${tag}-${i}`);
  const opened = await Promise.all(
    steps.map((step) => StagedWorkspace.open({ root, stagingDir, layerDir: path.join(layersDir, step) })),
  );
  // Both processes start merging at the same moment, so their merges interleave.
  while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
  await Promise.all(
    opened.map(async (ws, i) => {
      await ws.writeFile(`${steps[i]}.txt`, `staged by step ${steps[i]}`);
      await ws.mergeOwnLayer(steps[i]!, { attempt: 1, result: { step: steps[i] } });
    }),
  );
}

main().catch((err) => {
  process.stderr.write(String(err?.stack ?? err));
  process.exit(1);
});
