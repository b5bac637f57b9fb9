import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../src/local/embedded-postgres';
import { freePort } from './ports';

export interface PostgresServer {
  /** Connection string to the server's `postgres` maintenance database. */
  serverUrl: string;
  stop(): Promise<void>;
}

/**
 * The PostgreSQL server of a test run or a benchmark: the one DATABASE_URL names, else a
 * throw-away embedded one in a temporary folder (deleted at stop).
 */
export async function startPostgresServer(label: string): Promise<PostgresServer> {
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = '/postgres';
    return { serverUrl: url.toString(), stop: async () => undefined };
  }
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `partner-api-${label}-pg-`));
  // As root, initdb runs as the `postgres` user, who must be able to enter the folder.
  await chmod(dataDir, 0o755);
  const running = await startEmbeddedPostgres({ databaseDir: path.join(dataDir, 'data'), port: await freePort(), persistent: false });
  return {
    serverUrl: running.serverUrl,
    async stop() {
      await running.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
