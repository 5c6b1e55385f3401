/**
 * The comparisons that did not do equal work on both sides, what each does now, and the figure before the change
 * (the last run of the old comparison, as published then). RESULTS.md prints each beside the row that replaced it.
 */
export interface ComparisonChange {
  comparison: string;
  change: string;
  /** The old figure, as measured then (date and load where known). */
  before: string;
  /** The row of the current results that replaced it: its suite and exact name. */
  suite: string;
  row: string;
}

export const COMPARISON_CHANGES: ComparisonChange[] = [
  {
    comparison: 'replay headline: Jukebox vs Polly.js',
    change:
      'Jukebox now opens, reads, verifies (BLAKE3 + BLAKE2b chain) and decodes the .jbx file in every iteration, as Polly.js reads its recording in every iteration; before, the tape was read once outside a loop of 3,000 replays',
    before:
      '1.11 ms (tape decoded once) against Polly.js 115 ms, ratio 0.0097 (2026-12-03 20:50, loaded); 0.136 ms on a quiet machine',
    suite: 'replay',
    row: 'replay from the .jbx file (read, verify, decode, replay), 51 steps',
  },
  {
    comparison: 'replay incl. reading the tape',
    change:
      'the reader reads the file in windows, decodes each payload in one pass and hashes in place; the row now compares with peers that also load their recordings',
    before:
      '25.6 ms on a quiet machine (~40 µs a frame to read and verify); 177 ms loaded (2026-12-03 20:50)',
    suite: 'replay',
    row: 'replay from the .jbx file (read, verify, decode, replay), 51 steps',
  },
  {
    comparison: 'warm replay',
    change:
      'a warm Jukebox replay (tape in memory) is compared with Polly.js and nock with their recordings loaded once, and with a same-layer peer that answers each call with the recorded parsed response after a deep-equal check of the request',
    before: 'no warm peer: the warm Jukebox figure stood against cold Polly.js and nock',
    suite: 'replay',
    row: 'replay of the tape already in memory, 51 steps',
  },
  {
    comparison: 'per step',
    change:
      'both sides divided by the same 26 model calls; before, Jukebox was divided by its 51 steps (model + tool) and Polly.js by its 26 exchanges',
    before: '0.0219 ms a step against Polly.js 4.44 ms an exchange (2026-12-03 20:50)',
    suite: 'replay',
    row: 'replay from the .jbx file, per model call',
  },
  {
    comparison: "Temporal's replayer",
    change:
      'warm against warm (one Worker.runReplayHistories for many histories) and cold against cold (history read from the tape and a new replay worker each time, against the Jukebox replay that reads its file)',
    before:
      '1.11 ms warm Jukebox against Worker.runReplayHistory with a new replay worker per call, 686 ms (2026-12-03 20:50)',
    suite: 'replay',
    row: 'replay of the tape already in memory, 51 steps, against the warm Temporal replayer',
  },
  {
    comparison: 'read + verify a tape, per frame',
    change:
      'printed per frame beside its bound: the same bytes read, BLAKE3-hashed, BLAKE2b-chained and decoded',
    before: '~40 µs a frame (10,000 frames in 405 ms, quiet machine)',
    suite: 'tape',
    row: 'read + verify a tape, per frame',
  },
  {
    comparison: 'recording overhead',
    change:
      'recorder on and off interleaved round by round, 7 runs each, with the spread; the tape/history ratio also for a flat run and against gzip-compressed history',
    before: 'off: 3 runs, then on: 3 runs, medians only; only the growing chat, against uncompressed history',
    suite: 'recording',
    row: '50-step growing chat, recorded',
  },
  {
    comparison: 'SQL commit of 41 staged inserts',
    change:
      'the peer runs the same 41 inserts in one transaction; before, one autocommitted insert multiplied by 41',
    before: '1,084 ms against 41 autocommitted inserts, 644 ms, ratio 1.68 (2026-12-03 21:31, loaded)',
    suite: 'shadowBooth',
    row: 'SQL commit of 41 staged inserts (replay + checks)',
  },
  {
    comparison: 'SQL commit of 41 staged inserts: how it is timed',
    change:
      'each of 11 sessions stages 41 inserts and commits; the commit is timed each time, interleaved with the peer, and the medians compared; before, the first commit of the process was timed once beside the median of 5 peer runs (with the old code a first commit took ~56 ms, later ones 43-50 ms: most of the drop since is the code, not the timing)',
    before: '84.67 ms against 7.48, ratio 11.31 (2026-12-04 05:24, load 2.5)',
    suite: 'shadowBooth',
    row: 'SQL commit of 41 staged inserts (replay + checks)',
  },
  {
    comparison: 'booth open',
    change: 'the peer is an overlayfs mount of the same tree, not a full copy (fs.cp)',
    before: '0.32 ms against fs.cp of the tree, 6,496 ms (10,000 files, 2026-12-03 21:31)',
    suite: 'shadowBooth',
    row: 'booth open, 10,000-file workspace',
  },
  {
    comparison: 'tape append',
    change:
      'the peer writes raw records to a file descriptor opened once (fs.writeSync), not fs.appendFileSync, which opens and closes the file for every record',
    before: 'against fs.appendFileSync (an open and a close per record)',
    suite: 'tape',
    row: 'tape append, per 200-byte frame',
  },
];
