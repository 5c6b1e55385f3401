/** `jbx view [DIR|TAPE] [--port P]`: the tape viewer, a local web app on 127.0.0.1, until SIGINT / SIGTERM. */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { TapeCatalog } from '../../recorder/catalog';
import { tapeDirFromEnv } from '../../recorder/store';
import type { ConnectedClient } from '../../temporal/client/connect';
import { type TemporalConfig, temporalConfigFromEnv } from '../../temporal/config';
import { deciderOf } from '../approvals/decider';
import type { CommandSpec } from '../command';
import { ExitCode, ExitError, usageError } from '../exitError';
import { createProgress } from '../verify/progress';
import { startViewer, type ViewerDecide, ViewerListenError } from '../viewer';

/**
 * The viewer's Approve / Reject: through the same client API as `jbx approve`, on a Temporal connection opened
 * at the first decision (a viewer that only reads never connects).
 */
function viewerDecisions(config: TemporalConfig): { decide: ViewerDecide; close(): Promise<void> } {
  let connected: Promise<ConnectedClient> | undefined;
  return {
    async decide(run, d) {
      // Loaded here: the Temporal client is not needed to read tapes.
      const { approve, reject } =
        require('../../temporal/client/approvals') as typeof import('../../temporal/client/approvals');
      const { connectClient } =
        require('../../temporal/client/connect') as typeof import('../../temporal/client/connect');
      connected ??= connectClient(config);
      connected.catch(() => {
        connected = undefined;
      });
      const { client } = await connected;
      const handle = client.workflow.getHandle(run.workflowId);
      const common = { by: d.by, approvalId: d.approvalId, runId: run.runId };
      return d.verdict === 'approve'
        ? approve(handle, {
            ...common,
            ...(d.note ? { note: d.note } : {}),
            ...(d.args ? { args: d.args } : {}),
          })
        : reject(handle, { ...common, reason: d.note ?? '' });
    },
    async close() {
      await (await connected?.catch(() => undefined))?.close();
    },
  };
}

const USAGE = 'jbx view [DIR|TAPE] [--port P] [--by NAME] [--read-only] [--json]';
export const DEFAULT_VIEWER_PORT = 4030;

function portOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_VIEWER_PORT;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw usageError(
      `--port must be an integer from 0 to 65535, got ${JSON.stringify(value)}\nusage: ${USAGE}`,
    );
  return port;
}

/** DIR serves that folder; TAPE serves its folder and opens it. Default: the tape folder. */
function target(arg: string | undefined): { dir: string; open: string | null } {
  if (arg === undefined) return { dir: tapeDirFromEnv(), open: null };
  const p = path.resolve(arg);
  if (!existsSync(p)) throw usageError(`no such file or folder: ${arg}\nusage: ${USAGE}`);
  if (statSync(p).isDirectory()) return { dir: p, open: null };
  if (!p.endsWith('.jbx'))
    throw usageError(`${arg} is not a .jbx tape; give a tape or a folder of tapes\nusage: ${USAGE}`);
  return { dir: path.dirname(p), open: path.basename(p, '.jbx') };
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export const viewCommand: CommandSpec = {
  name: 'view',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    port: { type: 'string' },
    by: { type: 'string' },
    'read-only': { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    if (positionals.length > 1) throw usageError(`jbx view takes one DIR or TAPE\nusage: ${USAGE}`);
    const port = portOf(flags.port as string | undefined);
    const { dir, open } = target(positionals[0]);
    if (!existsSync(dir))
      throw usageError(`no tape folder at ${dir} (record a run first, or give DIR)\nusage: ${USAGE}`);
    // The first listing reads every new tape; do it here, with progress, so the first page opens at once.
    const progress = createProgress(`reading tapes in ${dir}`);
    await new TapeCatalog({
      dir,
      onProgress: (p) => progress.tick(() => `${p.read}/${p.toRead} (${p.tape})`),
    }).list();
    progress.done();
    const temporal = temporalConfigFromEnv();
    const decisions = flags['read-only'] === true ? undefined : viewerDecisions(temporal);
    let viewer: Awaited<ReturnType<typeof startViewer>>;
    try {
      viewer = await startViewer({
        dir,
        port,
        temporalUi: `http://127.0.0.1:${temporal.uiPort}`,
        namespace: temporal.namespace,
        preload: open ? [open] : [],
        ...(decisions ? { decide: decisions.decide, decider: deciderOf(flags.by) } : {}),
      });
    } catch (err) {
      if (err instanceof ViewerListenError) throw new ExitError(ExitCode.failed, err.message, err);
      throw err;
    }
    const url = open ? `${viewer.url}#/run/${encodeURIComponent(open)}` : viewer.url;
    out.result(`jbx view: ${url}  (tapes in ${dir}; Ctrl-C stops it)`, { url, port: viewer.port, dir, open });
    await untilSignal();
    await viewer.close();
    await decisions?.close();
    out.info('jbx view: stopped');
  },
};
