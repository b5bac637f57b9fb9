import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { seedOrganisation } from '../../src/local/seed/generate';
import { createKey, createOrgWithKeys } from '../support/factories';
import { openBenchDatabase, report, startServerProcess } from './support';

/**
 * What one instance sustains on this machine, for the README's operations section:
 * 1. A mixed read load (pages of several resources, the summary, one learner's rows) at a steady
 *    16 connections: requests per second and latencies.
 * 2. An overload of 400 connections, exports included, for 30 s: every answer a 200, a 503 with
 *    Retry-After or a 429, and the server's peak memory.
 * 3. The idle minutes after it: the server's memory as V8 and the allocator give it back.
 */
const learners = Number(process.env.BENCH_LEARNERS ?? 2000);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 180);

const database = await openBenchDatabase('bench_capacity');
const org = await createOrgWithKeys(database.db, { name: 'Organisme du banc' });
await seedOrganisation(database.db, { orgId: org.orgId, learners, seed: 3 });
await sql`vacuum analyze`.execute(database.db);
const keys = [
  org.readKey,
  ...(await Promise.all(Array.from({ length: 15 }, async () => (await createKey(database.db, org.orgId, ['read'])).key))),
];
const learner = (
  await sql<{ email: string }>`select a.email from memberships m join accounts a on a.id = m.account_id
  where m.org_id = ${org.orgId} order by a.email limit 1`.execute(database.db)
).rows[0]!.email;

const server = await startServerProcess(database.url, { RATE_LIMIT_PER_MINUTE: '100000000', LOG_LEVEL: 'warn' });
const pid = server.child.pid!;

function memoryMb(): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
  return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
}

const year = new Date().getFullYear();
const readPaths = [
  '/users?limit=100',
  '/learners?limit=100',
  `/logins?limit=1000&year=${year}`,
  `/attendance?limit=1000&year=${year}`,
  `/enrollments?limit=100&year=${year}`,
  `/progress?limit=1000&year=${year}`,
  '/summary',
  `/quiz-answers?email=${encodeURIComponent(learner)}&year=${year}`,
];
const exportPaths = [`/logins?format=csv&year=${year}`, `/attendance?format=xlsx&year=${year}`];

/** An autocannon run over these paths in turn, each request with one of the keys. */
async function run(paths: string[], connections: number, durationSeconds: number) {
  const requests = paths.map((path, index) => ({
    method: 'GET' as const,
    path: `/v1${path}`,
    headers: { authorization: `Bearer ${keys[index % keys.length]}` },
  }));
  const statuses = new Map<number, number>();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      { url: server.baseUrl.replace(/\/v1$/, ''), connections, duration: durationSeconds, requests, timeout: 30 },
      (error, outcome) => (error ? reject(error) : resolve(outcome)),
    );
    instance.on('response', (_client, status) => statuses.set(status, (statuses.get(status) ?? 0) + 1));
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    statuses: [...statuses].sort(([a], [b]) => a - b),
  };
}

const statusText = (statuses: [number, number][]) => statuses.map(([status, count]) => `${status} ×${count}`).join(', ');

try {
  const ready = memoryMb();
  await run(readPaths, 8, 5);
  const mixed = await run(readPaths, 16, 20);
  report('mixed reads, 16 connections, 20 s: requests/s', String(mixed.requestsPerSecond));
  report('mixed reads: p50, p99', `${mixed.p50} ms, ${mixed.p99} ms`);
  report('mixed reads: answers', statusText(mixed.statuses));
  const overload = await run([...readPaths, ...exportPaths], 400, 30);
  const onlyExpected = overload.errors === 0 && overload.statuses.every(([status]) => [200, 429, 503].includes(status));
  report('overload, 400 connections with exports, 30 s: requests/s', String(overload.requestsPerSecond));
  report('overload: answers', `${statusText(overload.statuses)}; connection errors ${overload.errors}`, {
    text: 'only 200, 503 or 429',
    met: onlyExpected,
  });
  const afterOverload = memoryMb();
  report('server memory: at ready, after the overload, peak (MB)', `${ready.rss}, ${afterOverload.rss}, ${afterOverload.peak}`);
  const idle: number[] = [];
  for (let waited = 0; waited < idleSeconds; waited += 15) {
    await sleep(15_000);
    idle.push(memoryMb().rss);
  }
  report(`server memory every 15 s of ${idleSeconds} s idle (MB)`, idle.join(', '));
  report('memory given back after the idle minutes (MB)', String(afterOverload.rss - idle.at(-1)!));
} finally {
  await server.stop();
  await database.close();
}
