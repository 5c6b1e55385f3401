import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The Temporal worker's native bridge misbehaves inside worker threads.
    pool: 'forks',
    globalSetup: ['test/globalSetup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
