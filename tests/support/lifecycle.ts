import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import type { DB } from '../../db/connection';
import type { Config } from '../../src/config';
import { buildTestApp } from './app';
import { createTestDatabase, type TestDatabase } from './database';

// The lifecycle of a test file (or describe block) in one call: each helper registers its own
// beforeAll and afterAll where it is called, and returns a handle whose fields are read inside tests
// and hooks. Call it before the file's own hooks: vitest runs beforeAll hooks in the order they were
// registered and afterAll hooks in reverse (its default `sequence.hooks: 'stack'`), so the file's
// own set-up finds the database and app ready, and its own teardown (workers, server processes,
// receivers) runs before the app is closed and the database dropped.

/** A test database of its own, migrated: a clone of the run's template. */
export interface DatabaseFixture {
  readonly db: DB;
  readonly url: string;
}

/** The real server on a test database, for fastify.inject (or listen). */
export interface AppFixture extends DatabaseFixture {
  readonly app: FastifyInstance;
}

function notSetUp(what: string): never {
  throw new Error(
    `${what} exists only between its beforeAll and afterAll: read it inside a test or a hook, not while the file is collected`,
  );
}

/** A fresh database for the enclosing file or describe block, dropped after its last test. */
export function useTestDatabase(): DatabaseFixture {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
    database = undefined;
  });
  const current = () => database ?? notSetUp('The test database');
  return {
    get db() {
      return current().db;
    },
    get url() {
      return current().url;
    },
  };
}

/** The real server on a fresh database of its own, for the enclosing file or describe block. */
export function useTestApp(overrides: Partial<Config> = {}): AppFixture {
  return useTestAppOn(useTestDatabase(), overrides);
}

/** A server on a database already set up, closed after the last test: another configuration over the same rows. */
export function useTestAppOn(database: DatabaseFixture, overrides: Partial<Config> = {}): AppFixture {
  let app: FastifyInstance | undefined;
  beforeAll(async () => {
    app = await buildTestApp(database.db, overrides);
  });
  afterAll(async () => {
    await app?.close();
    app = undefined;
  });
  return {
    get db() {
      return database.db;
    },
    get url() {
      return database.url;
    },
    get app() {
      return app ?? notSetUp('The test app');
    },
  };
}
