import { formatUsd } from '../../llm/pricing/formatUsd';
import { outcomeLabel } from '../../recorder/boothOutcome';
import { OUTCOME_FILTERS, SORT_KEYS, TapeCatalog, type TapeRow } from '../../recorder/catalog';
import type { CommandSpec } from '../command';
import { usageError } from '../exitError';
import { createProgress } from '../verify/progress';
import { queryFromFlags } from './query';
import { formatTable } from './table';

const USAGE =
  `jbx ls [--outcome ${OUTCOME_FILTERS.join('|')}[,...]] [--since DATE|AGE] [--workflow NAME] ` +
  `[--sort ${SORT_KEYS.join('|')}] [--limit N] [--no-index] [--dir D] [--json]`;

/** Why the staging was rolled back, kept to one line of a terminal. */
function why(r: TapeRow): string {
  if (!r.rolledBack) return '';
  const text = `step ${r.rolledBack.step}: ${r.rolledBack.reason}`;
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}

function row(r: TapeRow, withWhy: boolean): string[] {
  const cells = [
    r.id,
    r.workflow ?? '?',
    r.started?.replace('T', ' ').replace(/\.\d+Z$/, 'Z') ?? '?',
    String(r.steps),
    String(r.frames),
    outcomeLabel(r.outcome, r.rolledBack, r.tripped),
    String(r.tokens),
    r.cost === null ? '-' : `$${formatUsd(r.cost)}`,
    String(r.bytes),
  ];
  return withWhy ? [...cells, why(r)] : cells;
}

export const lsCommand: CommandSpec = {
  name: 'ls',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    dir: { type: 'string' },
    outcome: { type: 'string' },
    since: { type: 'string' },
    workflow: { type: 'string' },
    sort: { type: 'string' },
    limit: { type: 'string' },
    'no-index': { type: 'boolean' },
  },
  async run({ positionals, flags, out }) {
    if (positionals.length) throw usageError(`jbx ls takes no arguments (use --dir)\nusage: ${USAGE}`);
    const q = queryFromFlags(flags, USAGE);
    let progress: ReturnType<typeof createProgress> | undefined;
    const catalog = new TapeCatalog({
      ...(typeof flags.dir === 'string' ? { dir: flags.dir } : {}),
      index: flags['no-index'] !== true,
      onProgress: (p) => {
        progress ??= createProgress(`reading ${p.toRead} new or changed tapes`);
        progress.tick(() => `${p.read}/${p.toRead}, at ${p.tape}`);
      },
    });
    const listing = await catalog.list(q);
    progress?.done();
    const filtered = q.outcome || q.since !== undefined || q.workflow || q.limit;
    // The reason column only when a listed run was rolled back: the gate's refusal, the failure, the agent's why.
    const withWhy = listing.rows.some((r) => r.rolledBack !== null);
    const human = listing.rows.length
      ? formatTable(
          [
            'id',
            'workflow',
            'started',
            'steps',
            'frames',
            'outcome',
            'tokens',
            'cost',
            'bytes',
            ...(withWhy ? ['rolled back because'] : []),
          ],
          listing.rows.map((r) => row(r, withWhy)),
        )
      : listing.total && filtered
        ? `none of the ${listing.total} tapes in ${listing.dir} match`
        : `no tapes in ${listing.dir}`;
    out.result(human, listing.rows);
  },
};
