import { ToolArgumentsError, type ToolDefinition } from '../../src/agent/tools/toolRegistry';
import { pageToolSpecs } from './agent';

/** The text of page `n`: a fixed head the model script matches on, then filler up to `bytes` characters. */
export function pageText(n: number, bytes: number): string {
  const head = `Page ${n} of the archive. `;
  const line = `Line of page ${n}: the archive keeps every record of the long run, word for word. `;
  return (
    head +
    line
      .repeat(Math.max(0, Math.ceil((bytes - head.length) / line.length)))
      .slice(0, Math.max(0, bytes - head.length))
  );
}

/** read_page, returning pages of `bytes` characters (default 8 KiB). */
export function pageTool(bytes = 8 * 1024): ToolDefinition {
  return {
    spec: pageToolSpecs[0]!,
    async run(args) {
      const page = args.page;
      if (typeof page !== 'number' || !Number.isInteger(page) || page < 0)
        throw new ToolArgumentsError(
          'read_page',
          `argument page must be a page number, got ${JSON.stringify(page)}`,
        );
      return pageText(page, bytes);
    },
  };
}
