/**
 * With --json, stdout carries exactly one JSON document and everything for humans goes to stderr, so
 * `jbx ... --json | jq` always works.
 */
export interface Output {
  json: boolean;
  result(human: string, data: unknown): void;
  info(message: string): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(human, data) {
      if (json) process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
      else process.stdout.write(`${human}\n`);
    },
    info(message) {
      process.stderr.write(`${message}\n`);
    },
  };
}
