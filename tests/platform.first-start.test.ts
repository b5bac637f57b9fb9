import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countOrganisations } from '../db/organisations';
import { seedDemoOnFirstStart } from '../src/local/demo';
import { testConfig } from './support/app';
import { createTestDatabase, type TestDatabase } from './support/database';

// Server processes may start together on one empty database (replicas behind a load balancer, or
// two `npm start` on one DATABASE_URL): what a first start creates, it creates once.

let database: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'first-start-'));
});
afterAll(async () => {
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('a first start', () => {
  it('seeds one demo organisation when two processes start together on an empty database, and both print its keys', async () => {
    const config = testConfig({ demo: true, dataDir });
    expect(await countOrganisations(database.db)).toBe(0);
    const [first, second] = await Promise.all([seedDemoOnFirstStart(database.db, config), seedDemoOnFirstStart(database.db, config)]);
    expect(await countOrganisations(database.db)).toBe(1);
    expect(first).not.toBeNull();
    expect(second).toEqual(first);
  }, 60_000);
});
