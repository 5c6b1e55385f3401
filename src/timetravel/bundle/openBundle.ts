/**
 * Reading a bundle back: every byte hashed (format.ts), then the parts checked against the manifest and each
 * other: the tape verifies frame by frame and is the one the manifest names, the workflow code hashes to the
 * tape's agentCodeHash, the history is of the tape's run and lines up with its steps.
 */
import { readFileSync } from 'node:fs';
import { temporal } from '@temporalio/proto';
import { hashBundleCode } from '../../recorder/agentCodeHash';
import { readTape, type Tape } from '../../recorder/tape';
import { HistoryMismatchError } from '../fork/errors';
import { alignHistory, type HistorySegment } from '../fork/historyPoint';
import { readTimeline, type Timeline } from '../replay/timeline';
import { decodeContentPack } from './contentPack';
import { BundleCorruptError } from './errors';
import { type DecodedPart, decodeBundle } from './format';
import { type BundleManifest, MANIFEST_FORMAT } from './manifest';

type History = temporal.api.history.v1.IHistory;

export interface OpenedBundle {
  file: string;
  bytes: number;
  manifest: BundleManifest;
  parts: DecodedPart[];
  tape: Tape;
  timeline: Timeline;
  /** The first execution's history. */
  history: History | null;
  /** Every execution's history, first to last (several for a run that continued as new; none without). */
  histories: HistorySegment[];
  workflowCode: string;
  /** The content-store blobs the histories' payload claims name (empty when none were carried). */
  content: Map<string, Uint8Array>;
}

export function openBundle(file: string, bytes: Uint8Array = readFileSync(file)): OpenedBundle {
  const parts = decodeBundle(bytes, file);
  const corrupt = (reason: string, detail: string, cause?: unknown) =>
    new BundleCorruptError(file, reason, detail, cause);
  const [head, ...rest] = parts;
  if (head!.kind !== 'manifest') throw corrupt('manifest', 'part 0 is not the manifest');
  let manifest: BundleManifest;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(head!.data)) as BundleManifest;
  } catch (err) {
    throw corrupt('manifest', 'the manifest is not JSON', err);
  }
  if (manifest?.format !== MANIFEST_FORMAT || !Array.isArray(manifest.parts))
    throw corrupt('manifest', `manifest format ${manifest?.format} is not ${MANIFEST_FORMAT}`);
  const listed = JSON.stringify(manifest.parts.map((p) => [p.name, p.kind, p.bytes, p.blake3]));
  const actual = JSON.stringify(rest.map((p) => [p.name, p.kind, p.data.length, p.hash]));
  if (listed !== actual)
    throw corrupt('manifest', "the manifest's part list does not match the parts in the file");
  const one = (kind: DecodedPart['kind'], name: string | undefined, optional = false) => {
    const of = rest.filter((p) => p.kind === kind);
    if (of.length > 1 || (!optional && of.length === 0) || (of[0] && of[0].name !== name))
      throw corrupt(
        'parts',
        `expected ${optional ? 'at most' : 'exactly'} one ${kind} part, named as the manifest says`,
      );
    return of[0];
  };
  const tapePart = one('tape', manifest.tape?.part)!;
  const codePart = one('workflowCode', manifest.workflowCode?.part)!;
  const contentPart = one('content', manifest.content?.part, true);
  if (!contentPart !== !manifest.content)
    throw corrupt('parts', 'the manifest and the parts disagree on the content part');
  // The first execution's history, then the later executions' of a run that continued as new, in order.
  const historyParts = rest.filter((p) => p.kind === 'history');
  const named = manifest.history
    ? [manifest.history.part, ...(manifest.segments ?? []).map((x) => x.part)]
    : [];
  if (
    historyParts.length !== named.length ||
    historyParts.some((p, i) => p.name !== named[i]) ||
    (!manifest.history && manifest.segments?.length)
  )
    throw corrupt('parts', 'the manifest and the parts disagree on the history');

  // Tape errors (TapeError) pass through as they are: they name the frame and what is recoverable.
  const tape = readTape(tapePart.data, { name: `${file}#${tapePart.name}` });
  const h = tape.header;
  const m = manifest.tape;
  if (
    h.tapeId !== m.tapeId ||
    h.workflowId !== m.workflowId ||
    h.runId !== m.runId ||
    tape.chain !== m.finalChain
  )
    throw corrupt(
      'tape',
      `the tape part is not the tape the manifest names (${m.tapeId}, chain ${m.finalChain})`,
    );
  const code = new TextDecoder().decode(codePart.data);
  const codeHash = hashBundleCode(code);
  if (codeHash !== h.agentCodeHash || codeHash !== manifest.workflowCode.hash)
    throw corrupt(
      'workflow-code',
      `the workflow code hashes to ${codeHash}; the tape was recorded by ${h.agentCodeHash}`,
    );
  const timeline = readTimeline(tape, `${file}#${tapePart.name}`);
  const histories: HistorySegment[] = [];
  if (historyParts.length) {
    if (manifest.history!.workflowId !== h.workflowId || manifest.history!.runId !== h.runId)
      throw corrupt(
        'history',
        `the history is of ${manifest.history!.workflowId} run ${manifest.history!.runId}, not the tape's run`,
      );
    const runIds = [h.runId, ...(manifest.segments ?? []).map((x) => x.runId)];
    historyParts.forEach((part, i) => {
      try {
        histories.push({ runId: runIds[i]!, history: temporal.api.history.v1.History.decode(part.data) });
      } catch (err) {
        throw corrupt('history', `the history part ${part.name} does not decode as a Temporal history`, err);
      }
    });
    try {
      alignHistory(timeline, histories, `${file}#${historyParts[0]!.name}`);
    } catch (err) {
      if (err instanceof HistoryMismatchError) throw corrupt('history', err.message, err);
      throw err;
    }
  }
  const history = histories[0]?.history ?? null;
  const content = contentPart ? decodeContentPack(contentPart.data, file) : new Map<string, Uint8Array>();
  return {
    file,
    bytes: bytes.length,
    manifest,
    parts,
    tape,
    timeline,
    history,
    histories,
    workflowCode: code,
    content,
  };
}
