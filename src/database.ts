import path from 'node:path';
import pg from 'pg';
import { createDb, type DB } from '../db/connection';
import { migrateToLatest } from '../db/migrate';
import type { Config } from './config';
import { serverUrlFor, startEmbeddedPostgres } from './embedded-postgres';

/** The database the server and the operator commands use, in the embedded cluster. */
export const applicationDatabaseName = 'partner_api';

export interface OpenedDatabase {
  readonly db: DB;
  readonly connectionString: string;
  close(): Promise<void>;
}

async function ensureDatabaseExists(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0)
      await client.query(`create database "${name}"`).catch((error) => {
        // Another process created it in between.
        if ((error as { code?: string }).code !== '42P04') throw error;
      });
  } finally {
    await client.end();
  }
}

/**
 * The database named by DATABASE_URL, or the project's own embedded PostgreSQL (data under
 * DATA_DIR), migrated to the latest schema (without time limits: a migration may rewrite large
 * tables). `serving` gives the pool the time limits of a server answering requests.
 */
export async function openDatabase(
  config: Config,
  options: { poolSize?: number; serving?: boolean; onConnectionLost?: (error: Error) => void } = {},
): Promise<OpenedDatabase> {
  let connectionString = config.databaseUrl;
  let stopEmbedded = async (): Promise<void> => {};
  if (connectionString === null) {
    const embedded = await startEmbeddedPostgres({
      databaseDir: path.join(config.dataDir, 'postgres'),
      port: config.embeddedPostgresPort,
    });
    stopEmbedded = embedded.stop;
    await ensureDatabaseExists(embedded.serverUrl, applicationDatabaseName);
    connectionString = serverUrlFor(config.embeddedPostgresPort, applicationDatabaseName);
  }
  const migrating = createDb(connectionString, { poolSize: 1 });
  try {
    await migrateToLatest(migrating).finally(() => migrating.destroy());
  } catch (error) {
    await stopEmbedded();
    throw error;
  }
  const db = createDb(connectionString, {
    poolSize: options.poolSize,
    onConnectionLost: options.onConnectionLost,
    ...(options.serving ? { connectTimeoutMs: config.databaseConnectTimeoutMs, queryTimeoutMs: config.databaseQueryTimeoutMs } : {}),
  });
  return {
    db,
    connectionString,
    async close() {
      await db.destroy();
      await stopEmbedded();
    },
  };
}
