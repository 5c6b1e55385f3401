/**
 * Is the current agent code the code that recorded the tape? The header's agentCodeHash is the BLAKE3 of the
 * workflow bundle (src/recorder/agentCodeHash.ts); bundling the configured workflows module now and hashing it
 * answers the question. A mismatch is a warning, not a refusal: the replay itself shows whether the change
 * matters, and refuses (divergence) only when it does.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { hashWorkflowBundle } from '../../recorder/agentCodeHash';
import type { ProjectConfig } from '../../timetravel/replay/projectConfig';
import { bundleAgentWorkflows } from './workflowBundle';

export interface CodeCheck {
  recorded: string;
  current: string;
  matches: boolean;
  /** Source files next to the agent and workflows modules changed after the tape was recorded. */
  changedFiles: { file: string; modifiedAt: string }[];
}

function changedSince(config: ProjectConfig, sinceMs: number): CodeCheck['changedFiles'] {
  const dirs = new Set([...config.agents, config.workflows].map((m) => path.dirname(m)));
  const out: CodeCheck['changedFiles'] = [];
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names) {
      if (!/\.(ts|js|mts|cts|json|ya?ml)$/.test(n)) continue;
      const file = path.join(dir, n);
      const m = statSync(file).mtimeMs;
      if (m > sinceMs)
        out.push({ file: path.relative(config.root, file), modifiedAt: new Date(m).toISOString() });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

export async function checkAgentCode(
  config: ProjectConfig,
  header: { agentCodeHash: string; createdAtMs: number },
  bundle?: { code: string },
): Promise<CodeCheck> {
  const current = await hashWorkflowBundle(bundle ?? (await bundleAgentWorkflows(config.workflows)));
  const matches = current === header.agentCodeHash;
  return {
    recorded: header.agentCodeHash,
    current,
    matches,
    changedFiles: matches ? [] : changedSince(config, header.createdAtMs),
  };
}

export function describeCodeCheck(c: CodeCheck): string {
  if (c.matches) return `agent code matches the tape (${c.current})`;
  const files = c.changedFiles.length
    ? `files changed since the recording: ${c.changedFiles.map((f) => `${f.file} (${f.modifiedAt})`).join(', ')}`
    : 'no source file next to the agent modules is newer than the tape (the change is elsewhere in the bundle, e.g. a dependency)';
  return `warning: the agent code changed since this tape was recorded (tape ${c.recorded}, now ${c.current}); ${files}`;
}
