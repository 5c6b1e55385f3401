/** The suite's real S3-compatible server (versitygw, servers/objectserver/): started once, reused by later files. */
import { type ObjectServerHandle, startObjectServer } from '../../servers/objectserver';

export async function objectServer(): Promise<ObjectServerHandle> {
  // Built by scripts/test.sh before vitest; a first build from here would take minutes.
  return startObjectServer({ log: (m) => process.stderr.write(`[objectServer] ${m}\n`), timeoutMs: 120_000 });
}

/** A key prefix of a test's own in the shared test bucket (a bucket per test would cost volumes each). */
export function uniquePrefix(what: string): string {
  return `${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}/`;
}
