/**
 * The S3-compatible test server (objectserver/, SeaweedFS): `tsx scripts/object-store.ts install|start|stop`.
 * S3 on http://127.0.0.1:$JUKEBOX_S3_PORT (default 7833).
 */
import { ensureSeaweedfs, SEAWEEDFS_VERSION, startObjectServer, stopObjectServer } from '../objectserver';
import { runScript } from './runScript';

const USAGE = 'usage: tsx scripts/object-store.ts install|start|stop';

async function main(action: string | undefined): Promise<number> {
  switch (action) {
    case 'install': {
      const started = Date.now();
      const weed = await ensureSeaweedfs();
      console.log(
        `SeaweedFS ${SEAWEEDFS_VERSION}: ${weed} (ready in ${Math.round((Date.now() - started) / 1000)} s)`,
      );
      return 0;
    }
    case 'start': {
      const s = await startObjectServer();
      console.log(s.reused ? `S3 already answers on ${s.endpoint}` : `SeaweedFS started (pid ${s.pid})`);
      for (const [k, v] of Object.entries(s.workerEnv())) console.log(`${k}=${v}`);
      console.log(`log: ${s.logFile}`);
      return 0;
    }
    case 'stop': {
      console.log((await stopObjectServer()) ? 'stopped SeaweedFS' : 'no SeaweedFS of ours was running');
      return 0;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

runScript('object-store', main);
