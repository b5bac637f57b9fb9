import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrateToLatest } from '../../db/migrate';
import { createDb } from '../../src/database';
import { startEmbeddedPostgres } from '../../src/embedded-postgres';
import { freePort } from './ports';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresServerUrl: string;
    templateDatabase: string;
  }
}

/**
 * One real PostgreSQL for the run (the embedded one, throw-away, unless DATABASE_URL names a
 * server), and a migrated template database that each test file clones into its own database.
 */
export default async function setup(project: TestProject) {
  let serverUrl: string;
  let stop = async () => undefined as void;
  let dataDir: string | null = null;
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = '/postgres';
    serverUrl = url.toString();
  } else {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'partner-api-test-pg-'));
    // As root, initdb runs as the `postgres` user, who must be able to enter the folder.
    await chmod(dataDir, 0o755);
    const port = await freePort();
    const running = await startEmbeddedPostgres({ databaseDir: path.join(dataDir, 'data'), port, persistent: false });
    serverUrl = running.serverUrl;
    stop = running.stop;
  }
  const templateDatabase = `partner_api_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDatabase}`);
  await admin.query(`create database ${templateDatabase}`);
  const templateUrl = new URL(serverUrl);
  templateUrl.pathname = `/${templateDatabase}`;
  const db = createDb(templateUrl.toString(), 2);
  await migrateToLatest(db);
  await db.destroy();

  project.provide('postgresServerUrl', serverUrl);
  project.provide('templateDatabase', templateDatabase);

  return async () => {
    await admin.query(`drop database if exists ${templateDatabase} with (force)`).catch(() => undefined);
    await admin.end();
    await stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  };
}
