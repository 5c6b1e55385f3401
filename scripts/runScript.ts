/**
 * The one exit path of the project's `scripts/*.ts` commands: the command's code is the exit status, and a
 * thrown error becomes one line on stderr naming the command and exit status 1.
 */
export function runScript(name: string, main: (command: string | undefined) => Promise<number>): void {
  const command = process.argv[2];
  main(command).then(
    (code) => process.exit(code),
    (err) => {
      console.error(`${name} ${command ?? ''} failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
