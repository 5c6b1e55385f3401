import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { blake3, chainNext, TapeWriter } from '../../src/recorder/tape';
import { frameHeadBytes } from '../../src/recorder/tape/frame';
import { hashersReady, useFallbackHashers } from '../../src/recorder/tape/hash';
import { FORMAT_VERSION } from '../../src/recorder/tape/header';
import { encodePayload } from '../../src/recorder/tape/payload';
import { NO_AGENT_NOTE } from '../breakers';
import { type BenchResult, type BenchSuite, median, result } from '../harness';
import { readVerifyAndBound } from '../readBound';

const FRAMES = 5_000;
const APPEND_ROUNDS = 5;

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
      const header = (id: string) => ({
        tapeId: id,
        createdAtMs: Date.now(),
        workflowType: 'bench',
        workflowId: id,
        runId: 'bench',
        taskQueue: 'bench',
        agentCodeHash: 'none',
      });
      // The peer: the same number of equally sized raw records written to a descriptor opened once (as the tape
      // writer keeps its file open), with no hashing, encoding or chain: each as long as the writer's frame,
      // its head (FORMAT.md, the version new tapes get) and the payload's MessagePack.
      const raw = Buffer.alloc(frameHeadBytes(FORMAT_VERSION) + encodePayload(payload).byteLength);
      // Interleaved rounds, each side once a round, medians compared, as the hashing rows below are timed: a
      // worker appends frames for as long as it runs, so the steady cost is the figure; the first round, with
      // the JIT still cold on both sides, is printed beside it.
      const rounds: { awaited: number; pipelined: number; peer: number }[] = [];
      for (let r = 0; r < APPEND_ROUNDS; r++) {
        // Round 0's tape is the one read back below: FRAMES awaited + FRAMES pipelined frames.
        const writer = await TapeWriter.open(path.join(dir, `bench-${r}.jbx`), header(`bench-${r}`), {
          fsync: 'none',
        });
        const t0 = performance.now();
        for (let i = 0; i < FRAMES; i++) await writer.append({ kind: 'llm.chunk', step: i, payload });
        const awaited = performance.now() - t0;
        // Streamed chunks are appended without waiting for each write, so they share writes.
        const q0 = performance.now();
        const pending: Promise<unknown>[] = [];
        for (let i = 0; i < FRAMES; i++) pending.push(writer.append({ kind: 'llm.chunk', step: i, payload }));
        await Promise.all(pending);
        const pipelined = performance.now() - q0;
        await writer.close();
        const fd = openSync(path.join(dir, `raw-${r}.bin`), 'a');
        const p0 = performance.now();
        for (let i = 0; i < FRAMES; i++) writeSync(fd, raw);
        const peer = performance.now() - p0;
        closeSync(fd);
        rounds.push({ awaited, pipelined, peer });
      }
      const file = path.join(dir, 'bench-0.jbx');
      const perFrame = (ms: number) => (ms * 1000) / FRAMES;
      const appendMs = median(rounds.map((x) => x.awaited));
      const pipelinedMs = median(rounds.map((x) => x.pipelined));
      const peerMs = median(rounds.map((x) => x.peer));
      const first = rounds[0]!;
      const appendNote =
        `median of ${APPEND_ROUNDS} interleaved rounds of ${FRAMES} frames; the first round (JIT cold): ` +
        `${perFrame(first.awaited).toFixed(2)} µs awaited, ${perFrame(first.pipelined).toFixed(2)} pipelined, ` +
        `${perFrame(first.peer).toFixed(2)} raw; target <= 10 µs a frame awaited (#34)`;

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

      return [
        result(
          'tape append, per 200-byte frame',
          perFrame(appendMs),
          'µs',
          'fs.writeSync of raw bytes to an open descriptor',
          perFrame(peerMs),
          appendNote,
        ),
        result(
          'tape append, per frame, pipelined (streamed chunks)',
          perFrame(pipelinedMs),
          'µs',
          'fs.writeSync of raw bytes to an open descriptor',
          perFrame(peerMs),
          appendNote,
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
          'its bound: file read + BLAKE3 + BLAKE2b chain + payload decode + blob inflate of the same bytes',
          read.boundUs,
          `${read.frames} frames of ${raw.byteLength} bytes; target <= 4 µs a frame; the two hash calls a frame alone (the rows above) take ${((blake3SmallNs + chainNs) / 1000).toFixed(2)} µs here`,
        ),
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
