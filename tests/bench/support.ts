import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { createDb, type DB } from '../../db/connection';
import { migrateToLatest } from '../../db/migrate';
import { learnersResource } from '../../db/resources/learners';
import { startEmbeddedPostgres } from '../../src/local/embedded-postgres';
import { freePort } from '../support/ports';
import { type PostgresServer, startPostgresServer } from '../support/postgres-server';

import { buildServer, childProcessesOf, procStat, projectRoot } from '../support/server-process';

export { freePort } from '../support/ports';
export { startServerProcess } from '../support/server-process';

// The server processes a benchmark starts run the bundle, as `npm start` does: built as it loads.
buildServer();

export interface BenchDatabase {
  db: DB;
  url: string;
  /** The PostgreSQL server's main process, when it runs on this machine (for CPU readings). */
  postmasterPid: number | null;
  close(): Promise<void>;
}

/**
 * A fresh, migrated database for one benchmark: on the server of DATABASE_URL when set, else on a
 * throw-away embedded PostgreSQL of its own.
 */
export async function openBenchDatabase(name = 'bench'): Promise<BenchDatabase> {
  const server = await startPostgresServer('bench');
  const serverUrl = server.serverUrl;
  const database = `${name}_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.query(`create database ${database}`);
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const db = createDb(url.toString(), { poolSize: 10 });
  await migrateToLatest(db);
  const backend = await admin.query<{ pid: number }>('select pg_backend_pid() as pid');
  // A backend's parent, when the server runs here (not DATABASE_URL's remote one).
  const parent = procStat(backend.rows[0]!.pid)?.[1];
  const postmasterPid = parent === undefined ? null : Number(parent);
  return {
    db,
    url: url.toString(),
    postmasterPid,
    async close() {
      await db.destroy();
      await admin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
      await admin.end();
      await server.stop();
    },
  };
}

/**
 * The PostgreSQL server of a benchmark whose databases are kept between runs (seeding them takes
 * minutes): DATABASE_URL's server when set, else an embedded one whose data stays under
 * .data/bench/<label> (`make clean-data` deletes it), started for the run and stopped after it.
 */
export async function benchPostgresServer(label: string): Promise<PostgresServer> {
  if (process.env.DATABASE_URL) return startPostgresServer(label);
  const databaseDir = path.join(projectRoot, '.data', 'bench', label);
  await mkdir(path.dirname(databaseDir), { recursive: true });
  const running = await startEmbeddedPostgres({ databaseDir, port: await freePort(), persistent: true });
  return { serverUrl: running.serverUrl, stop: () => running.stop() };
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
  url: string;
  headers?: Record<string, string>;
  connections?: number;
  durationSeconds?: number;
  method?: 'GET' | 'POST';
  body?: string;
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
  const verdict = target ? `  (target: ${target.text}, ${target.met ? 'met' : 'MISSED'})` : '';
  process.stdout.write(`${label.padEnd(60)} ${value}${verdict}\n`);
}

/**
 * CPU seconds (user and system) used so far by these processes and by every PostgreSQL process
 * of the machine, read from /proc (Linux): what a request costs, beside how many pass per second.
 */
export function cpuSeconds(pids: number[], postmasterPid: number | null): { processes: number; postgres: number } {
  const ticksPerSecond = 100;
  // utime, stime (and, with `children`, cutime and cstime: the CPU of children that exited).
  const usage = (pid: number, children = false) => {
    const fields = procStat(pid);
    if (!fields) return 0;
    const own = Number(fields[11]) + Number(fields[12]);
    return (children ? own + Number(fields[13]) + Number(fields[14]) : own) / ticksPerSecond;
  };
  // The bench's own PostgreSQL only (other clusters may run on the machine): its postmaster, with
  // the backends that ended (its children's time), and the processes it runs now.
  if (postmasterPid === null) return { processes: pids.reduce((sum, pid) => sum + usage(pid), 0), postgres: Number.NaN };
  let postgres = usage(postmasterPid, true);
  for (const backend of childProcessesOf(postmasterPid)) postgres += usage(backend);
  return { processes: pids.reduce((sum, pid) => sum + usage(pid), 0), postgres };
}

/** The organisation's busiest learner of a year: most logins, quiz attempts and tutoring sessions together. */
export async function busiestLearner(db: DB, orgId: string, year: number) {
  const rows = await learnersResource.select(db, { orgId, year, updatedSince: null, membershipId: null, programmeId: null }).execute();
  const activity = (row: (typeof rows)[number]) => row.connexions + row.evaluations_total + row.seances_tutorat;
  return rows.sort((a, b) => activity(b) - activity(a))[0]!;
}
