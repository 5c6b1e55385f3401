/** Packing a recorded run into one `.jbxb`: its tape, its Temporal history, the workflow code that recorded it. */
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { hashBundleCode } from '../../recorder/agentCodeHash';
import { blake3, readTape } from '../../recorder/tape';
import { toHex } from '../../recorder/tape/hash';
import { alignHistory } from '../fork/historyPoint';
import { readTimeline } from '../replay/timeline';
import { encodeContentPack } from './contentPack';
import { BundleInputError } from './errors';
import { type BundlePart, encodeBundle } from './format';
import { type BundleManifest, MANIFEST_FORMAT } from './manifest';

type History = temporal.api.history.v1.IHistory;

export interface BundleInput {
  tapeFile: string;
  /**
   * The run's history: protobuf bytes as stored beside the tape, or the decoded history; for a run that
   * continued as new, each execution's bytes, first to last.
   */
  history?:
    | { bytes: Uint8Array }
    | { history: History }
    | { segments: { runId: string; bytes: Uint8Array }[] };
  /** The workflow bundle whose hash is the tape's agentCodeHash. */
  workflowCode: string;
  /** The blobs the histories' payload claims name (hash to bytes), carried so a replay needs no content store. */
  content?: ReadonlyMap<string, Uint8Array>;
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
  // Each execution's history: one, or one per segment of a run that continued as new.
  const histories: { runId: string; bytes: Uint8Array; history: History }[] = [];
  if (input.history) {
    const H = temporal.api.history.v1.History;
    if ('segments' in input.history)
      for (const seg of input.history.segments)
        histories.push({ runId: seg.runId, bytes: seg.bytes, history: H.decode(seg.bytes) });
    else if ('bytes' in input.history)
      histories.push({ runId: h.runId, bytes: input.history.bytes, history: H.decode(input.history.bytes) });
    else
      histories.push({
        runId: h.runId,
        history: input.history.history,
        bytes: H.encode(H.fromObject(input.history.history)).finish(),
      });
    alignHistory(
      t,
      histories.map(({ runId, history }) => ({ runId, history })),
      'the history given',
    );
  }
  const content = input.content?.size ? encodeContentPack(input.content) : undefined;
  const tapeName = path.basename(input.tapeFile);
  const parts: BundlePart[] = [
    { kind: 'tape', name: tapeName, data: tapeBytes },
    ...histories.map((x, i) => ({
      kind: 'history' as const,
      name: i === 0 ? 'history.pb' : `history-${i}.pb`,
      data: x.bytes,
    })),
    { kind: 'workflowCode', name: 'workflow-bundle.js', data: new TextEncoder().encode(input.workflowCode) },
    ...(content ? [{ kind: 'content' as const, name: 'content.pack', data: content }] : []),
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
    history: histories[0]
      ? {
          part: 'history.pb',
          eventCount: histories[0].history.events?.length ?? 0,
          workflowId: h.workflowId,
          runId: h.runId,
        }
      : null,
    ...(histories.length > 1
      ? {
          segments: histories.slice(1).map((x, i) => ({
            part: `history-${i + 1}.pb`,
            eventCount: x.history.events?.length ?? 0,
            runId: x.runId,
          })),
        }
      : {}),
    workflowCode: { part: 'workflow-bundle.js', hash: codeHash },
    ...(content
      ? { content: { part: 'content.pack', blobs: input.content!.size, bytes: content.byteLength } }
      : {}),
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
  // `-o reports/run.jbxb` into a folder that does not exist yet makes it, as `jbx export` does.
  await mkdir(path.dirname(output), { recursive: true });
  await writeFile(tmp, bytes);
  await rename(tmp, output);
  return { file: output, bytes: bytes.length, manifest, hash: toHex(blake3(bytes)) };
}
