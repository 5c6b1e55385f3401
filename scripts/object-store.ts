/**
 * The S3-compatible test server (servers/objectserver/, versitygw): `tsx scripts/object-store.ts install|start|stop`.
 * S3 on http://127.0.0.1:$JUKEBOX_S3_PORT (default 7833).
 */
import {
  ensureVersitygw,
  startObjectServer,
  stopObjectServer,
  VERSITYGW_VERSION,
} from '../servers/objectserver';
import { ObjectBucket, objectStoreConfigFromEnv } from '../src/recorder';
import { runScript } from './runScript';

const USAGE = 'usage: tsx scripts/object-store.ts install|start|stop|create-bucket';

async function main(action: string | undefined): Promise<number> {
  switch (action) {
    case 'install': {
      const started = Date.now();
      const binary = await ensureVersitygw();
      console.log(
        `versitygw ${VERSITYGW_VERSION}: ${binary} (ready in ${Math.round((Date.now() - started) / 1000)} s)`,
      );
      return 0;
    }
    case 'start': {
      const s = await startObjectServer();
      console.log(s.reused ? `S3 already answers on ${s.endpoint}` : `versitygw started (pid ${s.pid})`);
      for (const [k, v] of Object.entries(s.workerEnv())) console.log(`${k}=${v}`);
      console.log(`log: ${s.logFile}`);
      return 0;
    }
    case 'stop': {
      console.log((await stopObjectServer()) ? 'stopped versitygw' : 'no versitygw of ours was running');
      return 0;
    }
    case 'create-bucket': {
      // The bucket JUKEBOX_TAPE_STORE names, on JUKEBOX_S3_ENDPOINT (compose's one-shot bucket service).
      const config = objectStoreConfigFromEnv();
      if (!config) {
        console.error('JUKEBOX_TAPE_STORE is not set; set it to s3://BUCKET/PREFIX/');
        return 2;
      }
      const bucket = new ObjectBucket(config);
      try {
        for (let attempt = 1; ; attempt++) {
          try {
            await bucket.createBucket();
            break;
          } catch (err) {
            // The store may still be starting.
            if (attempt >= 60) throw err;
            await new Promise((r) => setTimeout(r, 1_000));
          }
        }
      } finally {
        bucket.destroy();
      }
      console.log(`bucket ${config.bucket} is ready on ${config.endpoint ?? 'AWS S3'}`);
      return 0;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

runScript('object-store', main);
