/**
 * Runs in its own process (node --import tsx) so tests can prove that staged state survives the process that
 * staged it, and can SIGKILL a commit at a fault point like a crashed worker.
 */
import { StagedWorkspace } from '../../src/booth';

async function main(): Promise<void> {
  const [root, stagingDir, action, arg] = process.argv.slice(2) as [
    string,
    string,
    string,
    string | undefined,
  ];
  const ws = await StagedWorkspace.open({
    root,
    stagingDir,
    faultPoint: (name) => {
      if (action === 'commit-kill' && name === arg) process.kill(process.pid, 'SIGKILL');
    },
  });
  if (action === 'stage') {
    await ws.writeFile('from-child.txt', 'written by the child');
    await ws.rm('a.txt');
  } else if (action === 'read') {
    const out = {
      root: await ws.readdir('.'),
      parent: await ws.readFile('from-parent.txt', 'utf8'),
      changes: (await ws.changes()).map((c) => `${c.op} ${c.path}`),
    };
    process.stdout.write(JSON.stringify(out));
  } else if (action === 'commit-kill') {
    await ws.commit();
  }
}

main().catch((err) => {
  process.stderr.write(String(err?.stack ?? err));
  process.exit(1);
});
