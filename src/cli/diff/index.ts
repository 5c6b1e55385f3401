/** `jbx diff A B`: two tapes' timelines aligned step by step, side by side; --html writes a page. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { diffTimelines, renderDiffHtml, renderDiffTerminal } from '../../timetravel/diff';
import type { CommandSpec } from '../command';
import { usageError } from '../exitError';
import { readTimelineOrExit } from '../replay';
import { resolveTapePath } from '../verify/tapeArgument';

const USAGE = 'jbx diff A B [--html FILE] [--width N] [--dir D] [--json]';

export const diffCommand: CommandSpec = {
  name: 'diff',
  usage: USAGE,
  options: {
    json: { type: 'boolean' },
    dir: { type: 'string' },
    html: { type: 'string' },
    width: { type: 'string' },
  },
  async run({ positionals, flags, out }) {
    if (positionals.length !== 2)
      throw usageError(`jbx diff takes two tapes, got ${positionals.length}\nusage: ${USAGE}`);
    const dir = flags.dir as string | undefined;
    const [a, b] = positionals.map((p) => readTimelineOrExit(resolveTapePath(p, dir, USAGE)));
    const width = flags.width === undefined ? process.stdout.columns || 120 : Number(flags.width);
    if (!Number.isInteger(width) || width < 40)
      throw usageError(`--width needs an integer of at least 40\nusage: ${USAGE}`);
    const d = diffTimelines(a!, b!);
    if (typeof flags.html === 'string') {
      const file = path.resolve(flags.html);
      writeFileSync(file, renderDiffHtml(d));
      out.info(`wrote ${file}`);
    }
    out.result(renderDiffTerminal(d, width), d);
  },
};
