/** The manifest: part 0 of every bundle, JSON, saying what the other parts are and pinning their hashes. */
import type { PartKind } from './format';

export const MANIFEST_FORMAT = 1;

export interface ManifestPart {
  name: string;
  kind: PartKind;
  bytes: number;
  /** BLAKE3-256 of the part's data, hex. */
  blake3: string;
}

export interface BundleManifest {
  format: typeof MANIFEST_FORMAT;
  createdAt: string;
  createdBy: string;
  tape: {
    part: string;
    tapeId: string;
    workflowType: string;
    workflowId: string;
    runId: string;
    taskQueue: string;
    agentCodeHash: string;
    sealed: boolean;
    frames: number;
    /** The tape's chain after its last frame: pins the tape beyond its own hashes. */
    finalChain: string;
    outcome: string | null;
  };
  /** The first execution's history (a run that never continued as new has only this one). */
  history: { part: string; eventCount: number; workflowId: string; runId: string } | null;
  /** A run that continued as new: the histories of its later executions, in order. */
  segments?: { part: string; eventCount: number; runId: string }[];
  workflowCode: { part: string; hash: string };
  /** The content-store blobs the histories' payload claims name (contentPack.ts), when there are any. */
  content?: { part: string; blobs: number; bytes: number };
  /** Every part after the manifest, in file order. */
  parts: ManifestPart[];
}
