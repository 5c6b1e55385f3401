/** How `jbx show` turns frames into text and JSON: blob references resolved, bytes summarised. */
import { oneLine, printableJson } from '../../errors';
import { formatUsd } from '../../llm/pricing/formatUsd';
import {
  BlobRef,
  chunkEntries,
  decodeBlob,
  resolveMessages,
  type TapeBlob,
  type TapeFrame,
} from '../../recorder/tape';

const MAX_RESOLVE_DEPTH = 8;

export type Blobs = ReadonlyMap<string, TapeBlob>;

/** Replaces blob references by the blobs' decoded values (recursively: stored inputs reference messages). */
export function resolveValue(value: unknown, blobs: Blobs, depth = 0): unknown {
  if (value instanceof BlobRef) {
    const blob = blobs.get(value.hash);
    if (!blob || depth >= MAX_RESOLVE_DEPTH) return { blob: value.hash };
    return resolveValue(decodeBlob(blob), blobs, depth + 1);
  }
  if (value instanceof Uint8Array) {
    const hex = Buffer.from(value.subarray(0, 32)).toString('hex');
    return { bytes: value.byteLength, hex: value.byteLength > 32 ? `${hex}...` : hex };
  }
  if (Array.isArray(value)) return value.map((v) => resolveValue(v, blobs, depth));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveField(k, v, blobs, depth);
    return out;
  }
  return value;
}

/** A `messages` reference is a conversation chain: shown as the list of messages it stands for. */
function resolveField(key: string, value: unknown, blobs: Blobs, depth: number): unknown {
  if (key === 'messages' && value instanceof BlobRef) {
    try {
      return resolveMessages(blobs, value).map((m) => resolveValue(m, blobs, depth + 1));
    } catch {
      return { blob: value.hash };
    }
  }
  return resolveValue(value, blobs, depth);
}

export function frameJson(f: TapeFrame, blobs: Blobs) {
  const payload =
    f.kind === 'blob'
      ? blobs.get(f.blobKey!)
        ? resolveValue(decodeBlob(blobs.get(f.blobKey!)!), blobs)
        : null
      : resolveValue(f.payload, blobs);
  return {
    index: f.index,
    kind: f.kind ?? `unknown(${f.kindCode})`,
    step: f.step,
    recordedAtUs: f.recordedAtUs,
    offset: f.offset,
    length: f.length,
    encoding: f.encoding,
    ...(f.compressed ? { compressed: true } : {}),
    payloadHash: f.payloadHash,
    ...(f.kind === 'blob' ? { blobKey: f.blobKey } : {}),
    chain: f.chain,
    payload,
  };
}

const clip = (s: string, n = 100) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const j = (v: unknown) => clip(printableJson(v) ?? 'undefined');

interface Msg {
  role?: string;
  content?: string;
  toolCalls?: { name: string; arguments: unknown }[];
}

function describeMessage(m: Msg | undefined): string {
  if (!m) return '';
  const calls = m.toolCalls?.length
    ? ` calls ${m.toolCalls.map((c) => `${c.name}(${printableJson(c.arguments)})`).join(', ')}`
    : '';
  return `${m.role ?? '?'}: ${m.content ? printableJson(clip(m.content, 80)) : ''}${calls}`;
}

/** One line per frame: what happened, not every field. */
/** A booth tool step's result: which attempt's staging counted, reused or discarded. */
export function describeStaging(st: { attempt?: number; reused?: boolean; discarded?: number }): string {
  const parts = [`staging of attempt ${st.attempt} counted`];
  if (st.reused) parts.push('reused from its checkpoint');
  if (st.discarded !== undefined) parts.push(`attempt ${st.discarded}'s partial staging discarded`);
  return `[${parts.join('; ')}]`;
}

/** An approval frame in one line: what was asked and why, or who decided what, when (FORMAT.md kind 23). */
// biome-ignore lint/suspicious/noExplicitAny: display code reads payload fields loosely
export function describeApproval(p: Record<string, any>): string {
  const at = (ms: unknown) => (typeof ms === 'number' ? new Date(ms).toISOString() : '?');
  const id = oneLine(String(p.id));
  if (p.event === 'request') {
    const s = p.staged as { files?: unknown[]; sql?: unknown[]; mcp?: unknown[] } | undefined;
    const staged = s
      ? `; staged ${s.files?.length ?? 0} file(s), ${s.sql?.length ?? 0} SQL, ${s.mcp?.length ?? 0} MCP`
      : '';
    const subject = p.subject?.gates
      ? ''
      : ` ${oneLine(p.kind === 'mcp' ? `${p.subject?.server}/${p.subject?.tool}` : String(p.subject?.tool))}(${j(p.subject?.args)})`;
    return `asked ${id} (${p.kind}${subject}): ${clip(oneLine(String(p.reason)))}; deadline ${at(p.deadlineMs)}, then ${p.onTimeout}; ${p.deciders ? `deciders ${oneLine(p.deciders.join(', '))}` : 'anyone decides'}${staged}`;
  }
  if (p.event === 'timeout') return `timed out ${id} at ${at(p.atMs)}: nobody decided; then ${p.onTimeout}`;
  const verdict = p.verdict === 'approve' ? 'approved' : 'rejected';
  const note = p.note ? `: ${clip(oneLine(String(p.note)))}` : '';
  const edited = p.args !== undefined ? ` [edited arguments ${j(p.args)}]` : '';
  const inherited = p.inheritedFrom ? ` (decided in parent tape ${oneLine(String(p.inheritedFrom))})` : '';
  return `${verdict} ${id} by ${oneLine(String(p.by))} at ${at(p.atMs)} via ${p.via}${note}${edited}${inherited}`;
}

export function frameLine(f: TapeFrame, blobs: Blobs, t0Us: number): string {
  // biome-ignore lint/suspicious/noExplicitAny: display code reads payload fields loosely; absent ones print as undefined
  const p = (f.kind === 'blob' ? {} : resolveValue(f.payload, blobs)) as Record<string, any>;
  const at = `+${((f.recordedAtUs - t0Us) / 1e6).toFixed(3)}s`;
  let what: string;
  switch (f.kind) {
    case 'llm.request': {
      const msgs = (p.messages ?? []) as Msg[];
      what = `${p.provider}/${p.model}: ${msgs.length} messages, last ${describeMessage(msgs[msgs.length - 1])}`;
      break;
    }
    case 'llm.chunk': {
      const chunks = chunkEntries(f.payload, blobs) as Array<[number, number, string | null, unknown?]>;
      const text = chunks.map((c) => c[2] ?? '').join('');
      const first = chunks[0];
      const last = chunks[chunks.length - 1];
      what = `${chunks.length} chunks #${first?.[0]}..#${last?.[0]} over ${first?.[1]}..${last?.[1]} ms ${printableJson(clip(text))}`;
      break;
    }
    case 'llm.response':
      what = `${p.stopReason}: ${describeMessage(p.message)} [${p.usage?.inputTokens ?? 0} in / ${p.usage?.outputTokens ?? 0} out tokens${typeof p.cost === 'number' ? `, $${formatUsd(p.cost)}` : ''}]`;
      break;
    case 'tool.call':
      what = `${oneLine(String(p.toolName))}(${j(p.args)})`;
      break;
    case 'tool.result':
      what = p.isError
        ? `error ${p.error?.name}: ${clip(oneLine(String(p.error?.message)))}`
        : `=> ${j(p.output)}`;
      if (p.staging) what += ` ${describeStaging(p.staging)}`;
      break;
    case 'random':
      what = `values ${j(p.values)} (observation ${p.seq})`;
      break;
    case 'clock':
      what = `now ${new Date(p.nowMs).toISOString()} (observation ${p.seq})`;
      break;
    case 'activity.start':
      what = `${p.activityType} activity ${p.activityId} attempt ${p.attempt}${p.pid ? ` (pid ${p.pid})` : ''}`;
      break;
    case 'activity.complete':
      what = `activity ${p.activityId} attempt ${p.attempt} completed => ${j(p.result)}`;
      break;
    case 'activity.error':
      what = `activity ${p.activityId} attempt ${p.attempt} failed (${p.willRetry ? 'will retry' : 'final'}): ${p.error?.name}: ${clip(oneLine(String(p.error?.message)))}`;
      break;
    case 'blob': {
      const b = blobs.get(f.blobKey!);
      const stored = f.payloadLength;
      what = f.compressed
        ? `${f.blobKey!.slice(0, 16)} ${b?.bytes.byteLength ?? '?'} bytes ${f.encoding}, stored deflated in ${stored}`
        : `${f.blobKey!.slice(0, 16)} ${stored} bytes ${b?.encoding ?? f.encoding}`;
      break;
    }
    case 'outcome':
      what = `${p.status}${p.result !== undefined ? ` => ${j(p.result)}` : ''}${p.error ? `: ${p.error.name}: ${clip(oneLine(String(p.error.message)))}` : ''}`;
      break;
    case 'approval':
      what = describeApproval(p);
      break;
    case 'seal':
      what = `${p.frameCount} frames, ${p.blobCount} blobs, final chain ${String(p.finalChain).slice(0, 16)}…`;
      break;
    default:
      what = j(p);
  }
  const kind = f.kind ?? `unknown(${f.kindCode})`;
  return `${String(f.index).padStart(5)}  step ${String(f.step).padStart(3)}  ${at.padStart(10)}  ${kind.padEnd(17)} ${what}`;
}

/** A frame with every field, for --frame and --step. */
export function frameDetail(f: TapeFrame, blobs: Blobs, t0Us: number): string {
  const json = frameJson(f, blobs);
  return [
    frameLine(f, blobs, t0Us),
    `       at byte ${f.offset}, ${f.length} bytes, recorded ${new Date(f.recordedAtUs / 1000).toISOString()}`,
    `       payload ${f.payloadHash}  chain ${f.chain}`,
    printableJson(json.payload, 2)
      .split('\n')
      .map((l) => `       ${l}`)
      .join('\n'),
  ].join('\n');
}
