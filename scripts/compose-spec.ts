/** The Compose Specification validator the deploy test runs on docker-compose.yml: `tsx scripts/compose-spec.ts install`. */
import { COMPOSE_SPEC_VERSION, ensureComposeValidator } from '../servers/composespec';
import { runScript } from './runScript';

async function main(action: string | undefined): Promise<number> {
  if (action !== 'install') {
    console.error('usage: tsx scripts/compose-spec.ts install');
    return 2;
  }
  console.log(`compose-go ${COMPOSE_SPEC_VERSION}: ${await ensureComposeValidator()}`);
  return 0;
}

runScript('compose-spec', main);
