/** The pinned Jaeger for telemetry: `tsx scripts/jaeger.ts install|start|stop`. */
import {
  ensureJaeger,
  JAEGER_VERSION,
  jaegerVersion,
  startJaeger,
  stopDetachedJaeger,
} from '../servers/jaeger';
import { runScript } from './runScript';

const USAGE = 'usage: tsx scripts/jaeger.ts install|start|stop';

async function main(action: string | undefined): Promise<number> {
  switch (action) {
    case 'install': {
      const binary = await ensureJaeger();
      console.log(`Jaeger ${(await jaegerVersion(binary)) ?? `(not ${JAEGER_VERSION})`}: ${binary}`);
      return 0;
    }
    case 'start': {
      const jaeger = await startJaeger({ otlpHttpPort: 4318, queryPort: 16686, detached: true });
      console.log(`Jaeger started (pid ${jaeger.pid})`);
      console.log(`OTLP/HTTP: ${jaeger.otlpUrl}   (jbx export TAPE --otlp ${jaeger.otlpUrl})`);
      console.log(`UI, API:   ${jaeger.queryUrl}`);
      console.log(`log:       ${jaeger.logFile}`);
      return 0;
    }
    case 'stop':
      console.log(
        (await stopDetachedJaeger()) ? 'Jaeger stopped' : 'no Jaeger started by this script is running',
      );
      return 0;
    default:
      console.error(USAGE);
      return 2;
  }
}

runScript('jaeger', main);
