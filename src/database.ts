import path from 'node:path';
import pg from 'pg';
import { createDb, type DB } from '../db/connection';
import { migrateToLatest } from '../db/migrate';
import type { Config } from './config';
import { isDatabaseUnavailable } from './database-faults';
import { serverUrlFor, startEmbeddedPostgres } from './local/embedded-postgres';
import type { StartPhases } from './start-phases';

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

/** What the operator reads when the database named by DATABASE_URL cannot be reached (the embedded one explains itself). */
function unreachableDatabase(connectionString: string, error: unknown): Error {
  const { code, message } = error as { code?: string; message?: string };
  const url = new URL(connectionString);
  url.password = url.password ? '***' : '';
  const target = `la base DATABASE_URL (${url.toString()})`;
  const detail = String(message ?? error);
  const [cause, fix] =
    code === '28P01' || code === '28000'
      ? [`${target} refuse l’utilisateur ou le mot de passe (${detail})`, 'corrigez l’utilisateur et le mot de passe de DATABASE_URL']
      : code === '3D000'
        ? [`${target} n’existe pas (${detail})`, `créez-la (createdb ${url.pathname.slice(1)}) ou corrigez son nom dans DATABASE_URL`]
        : [`${target} ne répond pas (${detail})`, 'vérifiez que ce PostgreSQL tourne et que son adresse et son port sont les bons'];
  return new Error(`${cause}. Pour y remédier : ${fix} ; ou retirez DATABASE_URL pour que le projet démarre son propre PostgreSQL.`);
}

/**
 * The database named by DATABASE_URL, or the project's own embedded PostgreSQL (data under
 * DATA_DIR), migrated to the latest schema (within DB_CONNECT_TIMEOUT_MS to connect, but without a
 * statement time limit: a migration may rewrite large tables). `serving` gives the pool the time limits of a server answering requests, and keeps the
 * embedded PostgreSQL out of the terminal's Ctrl-C: a server stops it itself, after its requests
 * and its webhook worker (an operator command, which has no stop of its own, leaves it in the
 * terminal's process group, so that Ctrl-C ends both).
 */
export async function openDatabase(
  config: Config,
  options: {
    poolSize?: number;
    keptConnections?: number;
    serving?: boolean;
    onConnectionLost?: (error: Error) => void;
    /** A server's start names its steps (src/start-phases.ts); an operator command's does not. */
    startPhases?: Pick<StartPhases, 'track'>;
  } = {},
): Promise<OpenedDatabase> {
  const track = options.startPhases?.track ?? (<T>(_name: string, step: Promise<T>) => step);
  let connectionString = config.databaseUrl;
  let stopEmbedded = async (): Promise<void> => {};
  if (connectionString === null) {
    const databaseDir = path.join(config.dataDir, 'postgres');
    const embedded = await track(
      `le démarrage du PostgreSQL du projet (${databaseDir})`,
      startEmbeddedPostgres({
        databaseDir,
        port: config.embeddedPostgresPort,
        detached: options.serving ?? false,
      }),
    );
    stopEmbedded = embedded.stop;
    connectionString = serverUrlFor(config.embeddedPostgresPort, applicationDatabaseName);
    try {
      await ensureDatabaseExists(embedded.serverUrl, applicationDatabaseName);
    } catch (error) {
      await stopEmbedded();
      throw error;
    }
  }
  // A connection time limit, but no statement one: a migration may rewrite a large table, or wait
  // for another instance's migration to finish.
  const migrating = createDb(connectionString, { poolSize: 1, connectTimeoutMs: config.databaseConnectTimeoutMs });
  try {
    await track('la migration du schéma de la base', migrateToLatest(migrating)).finally(() => migrating.destroy());
  } catch (error) {
    await stopEmbedded();
    const { code } = error as { code?: string };
    if (config.databaseUrl !== null && (isDatabaseUnavailable(error) || code === '28P01' || code === '28000' || code === '3D000'))
      throw unreachableDatabase(config.databaseUrl, error);
    throw error;
  }
  const db = createDb(connectionString, {
    poolSize: options.poolSize,
    keptConnections: options.keptConnections,
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
