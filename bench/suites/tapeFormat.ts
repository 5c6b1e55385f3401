import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { blake3, chainNext, TapeWriter } from '../../src/recorder/tape';
import { hashersReady, useFallbackHashers } from '../../src/recorder/tape/hash';
import { NO_AGENT_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';
import { readVerifyAndBound } from '../readBound';

const FRAMES = 5_000;

function timeNs(fn: () => void, iterations: number): number {
  const samples: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) fn();
    samples.push(Number(process.hrtime.bigint() - t0) / iterations);
  }
  return median(samples);
}

/** The format's own costs: appending frames, hashing small frames and big blobs, reading a tape back. */
export const tapeFormatSuite: BenchSuite = {
  name: 'tape',
  breaker: NO_AGENT_NOTE,
  async run(): Promise<BenchResult[]> {
    await hashersReady;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'jukebox-bench-tape-'));
    try {
      const payload = { role: 'assistant', content: 'x'.repeat(150), n: 1 };
      const file = path.join(dir, 'bench.jbx');
      const writer = await TapeWriter.open(
        file,
        {
          tapeId: 'bench',
          createdAtMs: Date.now(),
          workflowType: 'bench',
          workflowId: 'bench',
          runId: 'bench',
          taskQueue: 'bench',
          agentCodeHash: 'none',
        },
        { fsync: 'none' },
      );
      const t0 = performance.now();
      for (let i = 0; i < FRAMES; i++) await writer.append({ kind: 'llm.chunk', step: i, payload });
      const appendMs = performance.now() - t0;
      // Streamed chunks are appended without waiting for each write, so they share writes.
      const q0 = performance.now();
      const pending: Promise<unknown>[] = [];
      for (let i = 0; i < FRAMES; i++) pending.push(writer.append({ kind: 'llm.chunk', step: i, payload }));
      await Promise.all(pending);
      const pipelinedMs = performance.now() - q0;
      await writer.close();

      // Peer: the same number of equally sized raw records written to a descriptor opened once (as the tape
      // writer keeps its file open), with no hashing, encoding or chain.
      const raw = Buffer.alloc(84 + 180);
      const peerFile = path.join(dir, 'raw.bin');
      const fd = openSync(peerFile, 'a');
      const p0 = performance.now();
      for (let i = 0; i < FRAMES; i++) writeSync(fd, raw);
      const peerMs = performance.now() - p0;
      closeSync(fd);

      const small = randomBytes(200);
      const big = randomBytes(16 * 1024 * 1024);
      const blake3SmallNs = timeNs(() => blake3(small), 20_000);
      const sha256SmallNs = timeNs(() => createHash('sha256').update(small).digest(), 20_000);
      const chainNs = timeNs(() => chainNext(small.subarray(0, 32), small.subarray(0, 52)), 20_000);
      // The same two hashes through the libraries the reader used before (and falls back to).
      const restore = useFallbackHashers(true);
      const blake3FallbackNs = timeNs(() => blake3(small), 20_000);
      const chainFallbackNs = timeNs(() => chainNext(small.subarray(0, 32), small.subarray(0, 52)), 20_000);
      restore();
      const blake3BigMs = timeNs(() => blake3(big), 3) / 1e6;
      const sha256BigMs = timeNs(() => createHash('sha256').update(big).digest(), 3) / 1e6;

      const read = readVerifyAndBound(file, 10);

      const perFrameUs = (appendMs * 1000) / FRAMES;
      return [
        result(
          'tape append, per 200-byte frame',
          perFrameUs,
          'µs',
          'fs.writeSync of raw bytes to an open descriptor',
          (peerMs * 1000) / FRAMES,
        ),
        result(
          'tape append, per frame, pipelined (streamed chunks)',
          (pipelinedMs * 1000) / FRAMES,
          'µs',
          'fs.writeSync of raw bytes to an open descriptor',
          (peerMs * 1000) / FRAMES,
        ),
        result(
          'tape append throughput',
          FRAMES / (appendMs / 1000),
          'frames/s',
          'raw writes/s to an open descriptor',
          FRAMES / (peerMs / 1000),
        ),
        result(
          'BLAKE3 of a 200-byte frame (hash-wasm)',
          blake3SmallNs,
          'ns',
          'node:crypto sha256',
          sha256SmallNs,
        ),
        result(
          'BLAKE3 of a 200-byte frame (hash-wasm)',
          blake3SmallNs,
          'ns',
          'blake3-wasm',
          blake3FallbackNs,
        ),
        result(
          'BLAKE2b chain step (hash-wasm blake2b512)',
          chainNs,
          'ns',
          'node:crypto sha256 of 200 B',
          sha256SmallNs,
        ),
        result(
          'BLAKE2b chain step (hash-wasm blake2b512)',
          chainNs,
          'ns',
          'node:crypto blake2b512 (one-shot crypto.hash)',
          chainFallbackNs,
        ),
        result(
          'BLAKE3 of a 16 MiB blob',
          16 / (blake3BigMs / 1000),
          'MiB/s',
          'node:crypto sha256 MiB/s',
          16 / (sha256BigMs / 1000),
        ),
        result(
          'read + verify a tape, per frame',
          read.readUs,
          'µs',
          'its bound: file read + BLAKE3 + BLAKE2b chain + payload decode of the same bytes',
          read.boundUs,
          `${read.frames} frames of ~260 bytes; target <= 4 µs a frame; the two hash calls a frame alone (the rows above) take ${((blake3SmallNs + chainNs) / 1000).toFixed(2)} µs here`,
        ),
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
