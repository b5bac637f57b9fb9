import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDb } from '../../db/connection';
import { migrateToLatest } from '../../db/migrate';
import { startPostgresServer } from './postgres-server';

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
  const server = await startPostgresServer('test');
  const serverUrl = server.serverUrl;
  const templateDatabase = `partner_api_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDatabase}`);
  await admin.query(`create database ${templateDatabase}`);
  const templateUrl = new URL(serverUrl);
  templateUrl.pathname = `/${templateDatabase}`;
  const db = createDb(templateUrl.toString(), { poolSize: 2 });
  await migrateToLatest(db);
  await db.destroy();

  project.provide('postgresServerUrl', serverUrl);
  project.provide('templateDatabase', templateDatabase);

  return async () => {
    await admin.query(`drop database if exists ${templateDatabase} with (force)`).catch(() => undefined);
    await admin.end();
    await server.stop();
  };
}
