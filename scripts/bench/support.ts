import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { migrateToLatest } from '../../db/migrate';
import { createDb, type DB } from '../../src/database';
import { startEmbeddedPostgres } from '../../src/embedded-postgres';

export { freePort } from '../../tests/support/ports';
export { startServerProcess } from '../../tests/support/server-process';
import { freePort } from '../../tests/support/ports';

export interface BenchDatabase {
  db: DB;
  url: string;
  close(): Promise<void>;
}

/**
 * A fresh, migrated database for one benchmark: on the server of DATABASE_URL when set, else on a
 * throw-away embedded PostgreSQL of its own.
 */
export async function openBenchDatabase(name = 'bench'): Promise<BenchDatabase> {
  let serverUrl: string;
  let stop = async () => undefined as void;
  let dataDir: string | null = null;
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = '/postgres';
    serverUrl = url.toString();
  } else {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'partner-api-bench-pg-'));
    await chmod(dataDir, 0o755);
    const running = await startEmbeddedPostgres({ databaseDir: path.join(dataDir, 'data'), port: await freePort(), persistent: false });
    serverUrl = running.serverUrl;
    stop = running.stop;
  }
  const database = `${name}_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.query(`create database ${database}`);
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const db = createDb(url.toString(), 10);
  await migrateToLatest(db);
  return {
    db,
    url: url.toString(),
    async close() {
      await db.destroy();
      await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
      await admin.end();
      await stop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  errors: number;
  non2xx: number;
}

/** A closed-loop HTTP load (autocannon) against one URL. */
export async function load(options: {
  url: string; headers?: Record<string, string>; connections?: number; durationSeconds?: number; method?: 'GET' | 'POST'; body?: string;
}): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    connections: options.connections ?? 10,
    duration: options.durationSeconds ?? 10,
    // autocannon fails every request when these keys are present but undefined.
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/** Percentile of a list of numbers (nearest rank). */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/** One line of a bench's report: the figure, the target, and whether it is met. */
export function report(label: string, value: string, target?: { text: string; met: boolean }): void {
  const verdict = target ? `  (cible : ${target.text} — ${target.met ? 'atteinte' : 'MANQUÉE'})` : '';
  process.stdout.write(`${label.padEnd(60)} ${value}${verdict}\n`);
}
