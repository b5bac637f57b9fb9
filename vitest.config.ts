import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globalSetup: ['tests/support/global-build.ts', 'tests/support/global-postgres.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: two test files at a time, each on its own database.
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    // tests/support/lifecycle.ts relies on it: beforeAll hooks in the order registered, afterAll in
    // reverse, so a file's own teardown runs before its app is closed and its database dropped.
    sequence: { hooks: 'stack' },
  },
});
