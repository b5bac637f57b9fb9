import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globalSetup: ['tests/support/global-postgres.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: two test files at a time, each on its own database.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
