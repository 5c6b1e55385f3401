/**
 * With --json, stdout carries exactly one JSON document and everything for humans goes to stderr, so
 * `jbx ... --json | jq` always works.
 */
import { printableJson } from '../errors/printable';

export interface Output {
  json: boolean;
  result(human: string, data: unknown): void;
  info(message: string): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(human, data) {
      // Escapes what JSON.stringify leaves raw (bidi controls, C1): the same value for a parser, safe in a terminal.
      if (json) process.stdout.write(`${printableJson(data, 2)}\n`);
      else process.stdout.write(`${human}\n`);
    },
    info(message) {
      process.stderr.write(`${message}\n`);
    },
  };
}
