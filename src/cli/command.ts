import type { Output } from './output';

export interface CommandArgs {
  positionals: string[];
  flags: Record<string, string | boolean | undefined>;
  out: Output;
}

export interface CommandSpec {
  name: string;
  usage: string;
  /** Flags taking a value; every other flag is a boolean. */
  options?: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;
  run(args: CommandArgs): Promise<void>;
}
