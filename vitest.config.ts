import { defineConfig } from 'vitest/config';

/**
 * Suites that run a second time against Temporal on PostgreSQL (the production persistence, servers/temporalserver/):
 * end to end, crash-resume, forking, and workers on two hosts. `npx vitest run --project postgres` runs only them.
 */
const POSTGRES_SUITES = [
  'test/temporal/workflow/agentWorkflow.test.ts',
  'test/temporal/workflow/crashResume.test.ts',
  'test/timetravel/fork/forksOnTemporal.test.ts',
  'test/timetravel/fork/completesAFailedRun.test.ts',
  'test/recorder/oneTapeAcrossHosts.test.ts',
];

// Same default as servers/temporalserver/config.ts (a test checks); importing it here would load the project's
// TypeScript into the config loader, which cannot read it.
const PG_TEMPORAL_ADDRESS = process.env.JUKEBOX_PG_TEMPORAL_ADDRESS?.trim() || '127.0.0.1:7633';

export default defineConfig({
  test: {
    // The Temporal worker's native bridge misbehaves inside worker threads.
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 180_000,
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'dev-server',
          include: ['test/**/*.test.ts'],
          globalSetup: [
            'test/globalSetup.ts',
            'test/objectServerGlobalSetup.ts',
            'test/contentGlobalSetup.ts',
          ],
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: POSTGRES_SUITES,
          globalSetup: [
            'test/postgresGlobalSetup.ts',
            'test/objectServerGlobalSetup.ts',
            'test/contentGlobalSetup.ts',
          ],
          env: { JUKEBOX_TEMPORAL_ADDRESS: PG_TEMPORAL_ADDRESS },
        },
      },
    ],
  },
});
