/** A replay suite's worker thread: replays the tapes it is sent, one at a time, and sends back each result. */
import { parentPort } from 'node:worker_threads';
import { type ReplayOneOptions, replayOne } from './suite';

parentPort?.on('message', async (m: { file: string; options: ReplayOneOptions }) => {
  const result = await replayOne(m.file, m.options);
  try {
    parentPort!.postMessage(result);
  } catch {
    // A divergence value that cannot cross threads (a function an agent returned) goes as its JSON form.
    parentPort!.postMessage(JSON.parse(JSON.stringify(result)));
  }
});
