/** Packing a recorded run into one `.jbxb`: its tape, its Temporal history, the workflow code that recorded it. */
import { readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { hashBundleCode } from '../../recorder/agentCodeHash';
import { blake3, readTape } from '../../recorder/tape';
import { toHex } from '../../recorder/tape/hash';
import { alignHistory } from '../fork/historyPoint';
import { readTimeline } from '../replay/timeline';
import { BundleInputError } from './errors';
import { type BundlePart, encodeBundle } from './format';
import { type BundleManifest, MANIFEST_FORMAT } from './manifest';

type History = temporal.api.history.v1.IHistory;

export interface BundleInput {
  tapeFile: string;
  /** The run's history: protobuf bytes as stored beside the tape, or the decoded history. */
  history?: { bytes: Uint8Array } | { history: History };
  /** The workflow bundle whose hash is the tape's agentCodeHash. */
  workflowCode: string;
  createdBy?: string;
}

export interface WrittenBundle {
  file: string;
  bytes: number;
  manifest: BundleManifest;
  /** BLAKE3 of the whole bundle file, hex. */
  hash: string;
}

/** Builds the bundle bytes, checking first that the parts belong together (nothing is written otherwise). */
export function buildBundle(input: BundleInput): { bytes: Uint8Array; manifest: BundleManifest } {
  // One read: the bytes packed are the bytes verified (a damaged tape throws its TapeError here).
  const tapeBytes = readFileSync(input.tapeFile);
  const t = readTimeline(readTape(tapeBytes, { name: input.tapeFile }), input.tapeFile);
  const h = t.tape.header;
  const codeHash = hashBundleCode(input.workflowCode);
  if (codeHash !== h.agentCodeHash)
    throw new BundleInputError(
      input.tapeFile,
      `the workflow code given hashes to ${codeHash}, not to the tape's agentCodeHash ${h.agentCodeHash}; pass the code that recorded it`,
    );
  let historyBytes: Uint8Array | undefined;
  let history: History | undefined;
  if (input.history) {
    const H = temporal.api.history.v1.History;
    if ('bytes' in input.history) {
      historyBytes = input.history.bytes;
      history = H.decode(historyBytes);
    } else {
      history = input.history.history;
      historyBytes = H.encode(H.fromObject(history)).finish();
    }
    alignHistory(t, history, 'the history given');
  }
  const tapeName = path.basename(input.tapeFile);
  const parts: BundlePart[] = [
    { kind: 'tape', name: tapeName, data: tapeBytes },
    ...(historyBytes ? [{ kind: 'history' as const, name: 'history.pb', data: historyBytes }] : []),
    { kind: 'workflowCode', name: 'workflow-bundle.js', data: new TextEncoder().encode(input.workflowCode) },
  ];
  const manifest: BundleManifest = {
    format: MANIFEST_FORMAT,
    createdAt: new Date().toISOString(),
    createdBy: input.createdBy ?? 'jukebox',
    tape: {
      part: tapeName,
      tapeId: h.tapeId,
      workflowType: h.workflowType,
      workflowId: h.workflowId,
      runId: h.runId,
      taskQueue: h.taskQueue,
      agentCodeHash: h.agentCodeHash,
      sealed: t.tape.sealed,
      frames: t.tape.frames.length,
      finalChain: t.tape.chain,
      outcome: t.outcome?.status ?? null,
    },
    history: history
      ? {
          part: 'history.pb',
          eventCount: history.events?.length ?? 0,
          workflowId: h.workflowId,
          runId: h.runId,
        }
      : null,
    workflowCode: { part: 'workflow-bundle.js', hash: codeHash },
    parts: parts.map((p) => ({
      name: p.name,
      kind: p.kind,
      bytes: p.data.length,
      blake3: toHex(blake3(p.data)),
    })),
  };
  const bytes = encodeBundle([
    {
      kind: 'manifest',
      name: 'manifest.json',
      data: new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`),
    },
    ...parts,
  ]);
  return { bytes, manifest };
}

export async function writeBundle(input: BundleInput, output: string): Promise<WrittenBundle> {
  const { bytes, manifest } = buildBundle(input);
  const tmp = `${output}.${process.pid}.tmp`;
  await writeFile(tmp, bytes);
  await rename(tmp, output);
  return { file: output, bytes: bytes.length, manifest, hash: toHex(blake3(bytes)) };
}
