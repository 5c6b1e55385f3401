/**
 * The replay comparison in a process that only replays (no Temporal worker, model server or bench heap beside
 * it): Jukebox replaying the research agent's tape cold (the .jbx file opened, read, verified and decoded for every
 * replay) and warm (the tape in memory), against Polly.js, nock and a same-layer peer replaying the same run,
 * each cold (recording read from disk for every replay) and warm (loaded once). Each peer is timed interleaved
 * with the Jukebox side of the same temperature, round by round, so both see the same machine.
 * Usage: tsx bench/replayCompare.ts SPEC.json (written by bench/suites/replay.ts); prints JSON.
 */
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { researchAgent } from '../examples/sample/agent';
import { readTape } from '../src/recorder/tape';
import { hashersReady } from '../src/recorder/tape/hash';
import { readTimeline, replayTape } from '../src/timetravel/replay';
import { interleave, median } from './harness';
import { readVerifyAndBound } from './readBound';
import {
  loadCalls,
  nockColdReplay,
  pollyReplay,
  type Recordings,
  sameLayerReplay,
  stopNock,
  warmNock,
  warmPolly,
} from './replayPeers';

export interface CompareSpec {
  tape: string;
  recordings: Recordings;
  /** Rounds against the in-process peers (same-layer), and against the HTTP peers (Polly.js, nock). */
  rounds: number;
  httpRounds: number;
}

/** Each pairing's times in ms, round by round: `jukebox` is the Jukebox side timed beside that peer. */
export type CompareResult = Record<string, { jukebox: number[]; peer: number[] }>;

/**
 * What the process prints: the pairs; reading + verifying the tape beside its bounds; and the cold replay split
 * into its parts (medians, ms): reading the tape, building the timeline from it, the replay with the timeline.
 */
export interface CompareOutput {
  pairs: CompareResult;
  read: ReturnType<typeof readVerifyAndBound>;
  split: { readMs: number; timelineMs: number; replayMs: number };
}

async function main() {
  // The tape's hashers compile asynchronously: both sides are timed with the reader's usual ones.
  await hashersReady;
  const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as CompareSpec;
  const r = spec.recordings;
  const agent = researchAgent as never;
  const expected = loadCalls(r).output;
  const timeline = readTimeline(spec.tape);
  const cold = async () => {
    const rep = await replayTape(spec.tape, { agent });
    if (rep.status !== 'match') throw new Error(`replay diverged: ${JSON.stringify(rep.divergence)}`);
  };
  const warm = async () => {
    const rep = await replayTape(spec.tape, { agent, timeline });
    if (rep.status !== 'match') throw new Error(`replay diverged: ${JSON.stringify(rep.divergence)}`);
  };
  // Every HTTP peer's replay is checked the way Jukebox's is: the run's output must equal the recorded one.
  const checked = async (replay: () => Promise<unknown>) => {
    if (!isDeepStrictEqual(await replay(), expected)) throw new Error('a peer replay gave another output');
  };
  const out: CompareResult = {};
  const pair = async (
    name: string,
    rounds: number,
    jukebox: () => Promise<void>,
    peer: () => Promise<void>,
  ) => {
    const t = await interleave(rounds, { jukebox, peer });
    out[name] = t;
  };

  const warmRun = loadCalls(r);
  await pair('sameLayer.cold', spec.rounds, cold, () => sameLayerReplay(r));
  await pair('sameLayer.warm', spec.rounds, warm, () => sameLayerReplay(r, warmRun));

  await pair('polly.cold', spec.httpRounds, cold, () => checked(() => pollyReplay(r)));
  const polly = warmPolly(r);
  await pair('polly.warm', spec.httpRounds, warm, () => checked(() => pollyReplay(r, polly)));
  await polly.stop();

  await pair('nock.cold', spec.httpRounds, cold, () => checked(() => nockColdReplay(r)));
  const nock = await warmNock(r);
  await pair('nock.warm', spec.httpRounds, warm, () => checked(() => nock.replay()));
  nock.done();
  stopNock();
  // In this process that only replays, as the cold replays above: a process holding a Temporal worker pays
  // more for the same reading in garbage collection.
  const read = readVerifyAndBound(spec.tape, 50);
  const parts = { read: [] as number[], timeline: [] as number[], replay: [] as number[] };
  for (let i = 0; i <= 50; i++) {
    const t0 = performance.now();
    const tape = readTape(spec.tape);
    const t1 = performance.now();
    const built = readTimeline(tape, spec.tape);
    const t2 = performance.now();
    const rep = await replayTape(spec.tape, { agent, timeline: built });
    const t3 = performance.now();
    if (rep.status !== 'match') throw new Error(`replay diverged: ${JSON.stringify(rep.divergence)}`);
    if (i === 0) continue;
    parts.read.push(t1 - t0);
    parts.timeline.push(t2 - t1);
    parts.replay.push(t3 - t2);
  }
  const split = {
    readMs: median(parts.read),
    timelineMs: median(parts.timeline),
    replayMs: median(parts.replay),
  };
  process.stdout.write(`${JSON.stringify({ pairs: out, read, split } satisfies CompareOutput)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
