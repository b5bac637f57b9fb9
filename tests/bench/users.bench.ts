import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { countQuery } from '../../db/resources/list';
import { usersResource } from '../../db/resources/users';
import { createOrgWithKeys } from '../support/factories';
import { cpuSeconds, freePort, type LoadResult, load, openBenchDatabase, percentile, report, startServerProcess } from './support';

/**
 * Authenticated GET /users?limit=100 on an organisation of 5,000 learners, side by side with a bare
 * Fastify + pg server running the same SQL: what the API's own work (key, rate limit, validation,
 * envelope) costs. Target: ours within 1.3x of the bare server's throughput (goal 1.15x).
 */
const learners = 5000;
const database = await openBenchDatabase('bench_users');
const org = await createOrgWithKeys(database.db, { name: 'Organisme du banc' });
await sql`
  with new_accounts as (
    insert into accounts (email, name)
    select 'apprenant' || i || '@banc.fr', 'Apprenant ' || i from generate_series(1, ${learners}) i
    returning id, email
  ), new_members as (
    insert into memberships (org_id, account_id, status, joined_at)
    select ${org.orgId}, id, 'actif', now() - (random() * interval '700 days') from new_accounts
    returning id, joined_at
  )
  insert into licences (org_id, type, status, membership_id, assigned_at)
  select ${org.orgId}, 'standard', 'attribuée', id, joined_at from new_members`.execute(database.db);
await sql`analyze`.execute(database.db);

// The same SQL as the real handler: compiled from the resource's own query.
const filter = { orgId: org.orgId, year: 2026, updatedSince: null, membershipId: null, programmeId: null };
const rows = usersResource.select(database.db, filter);
const countSql = countQuery(usersResource.keys!(database.db, filter), 100000).compile(database.db);
const page = rows.compile();
const pageSql = `${page.sql} limit $${page.parameters.length + 1} offset $${page.parameters.length + 2}`;

const ours = await startServerProcess(database.url, { RATE_LIMIT_PER_MINUTE: '100000000', LOG_LEVEL: 'warn' });
const barePort = await freePort();
const bare = spawn(process.execPath, ['--import', 'tsx', path.join(path.dirname(fileURLToPath(import.meta.url)), 'bare-users-server.ts')], {
  env: {
    ...process.env,
    DATABASE_URL: database.url,
    PORT: String(barePort),
    COUNT_SQL: countSql.sql,
    COUNT_PARAMS: JSON.stringify(countSql.parameters),
    PAGE_SQL: pageSql,
    PARAMS: JSON.stringify(page.parameters),
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise<void>((resolve) => bare.stdout!.on('data', (chunk) => String(chunk).includes('ready') && resolve()));

try {
  const headers = { authorization: `Bearer ${org.readKey}` };
  for (const [url, h] of [
    [`${ours.baseUrl}/users?limit=100&offset=0`, headers],
    [`http://127.0.0.1:${barePort}/users?limit=100&offset=0`, {}],
  ] as const) {
    const check = await fetch(url, { headers: h });
    if (check.status !== 200) throw new Error(`${url}: ${check.status} ${await check.text()}`);
  }
  // Warm both up, then measure each alone (the machine has 2 cores: never both at once), in
  // alternating rounds so that a slower moment of the machine weighs on both sides alike.
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
  const targets = {
    ours: { url: `${ours.baseUrl}/users?limit=100&offset=0`, headers },
    bare: { url: `http://127.0.0.1:${barePort}/users?limit=100&offset=0` },
  };
  // Warm-up long enough for the JIT to settle: after a shorter one, ours' first measured round was still slow.
  for (const side of ['ours', 'bare'] as const) await load({ ...targets[side], durationSeconds: 5, connections });
  const results: Record<keyof typeof targets, LoadResult[]> = { ours: [], bare: [] };
  // What each request costs in CPU, the server's and PostgreSQL's: steadier than a throughput on a
  // machine shared with other work, and it says which side a difference comes from.
  const pids = { ours: ours.child.pid!, bare: bare.pid! };
  const cpu = { ours: { server: 0, postgres: 0 }, bare: { server: 0, postgres: 0 } };
  for (let round = 0; round < rounds; round += 1) {
    for (const side of ['ours', 'bare'] as const) {
      const before = cpuSeconds([pids[side]], database.postmasterPid);
      results[side].push(await load({ ...targets[side], durationSeconds: 5, connections }));
      const after = cpuSeconds([pids[side]], database.postmasterPid);
      cpu[side].server += after.processes - before.processes;
      cpu[side].postgres += after.postgres - before.postgres;
    }
  }
  const microsecondsPerRequest = (side: keyof typeof targets) => {
    const requests = results[side].reduce((sum, result) => sum + result.requests, 0);
    return `server ${Math.round((cpu[side].server * 1e6) / requests)} µs, PostgreSQL ${Math.round((cpu[side].postgres * 1e6) / requests)} µs`;
  };
  const median = (values: number[]) => percentile(values, 50);
  const summary = (side: keyof typeof targets) => {
    const all = results[side];
    return `${median(all.map((r) => r.requestsPerSecond))} req/s (rounds: ${all.map((r) => r.requestsPerSecond).join(', ')}), p50 ${median(all.map((r) => r.p50Ms))} ms, p99 ${median(all.map((r) => r.p99Ms))} ms, errors ${all.reduce((n, r) => n + r.errors + r.non2xx, 0)}`;
  };
  const ratio = median(results.bare.map((r) => r.requestsPerSecond)) / median(results.ours.map((r) => r.requestsPerSecond));
  process.stdout.write(
    `GET /users?limit=100 on ${learners} learners, ${connections} connections, ${rounds} alternating rounds of 5 s (medians)\n`,
  );
  report('ours: requests/s, p50, p99', summary('ours'));
  report('bare Fastify + pg, same SQL: requests/s, p50, p99', summary('bare'));
  report('ours: CPU per request', microsecondsPerRequest('ours'));
  report('bare: CPU per request', microsecondsPerRequest('bare'));
  report('bare / ours throughput', ratio.toFixed(2), { text: '<= 1.3 (goal 1.15)', met: ratio <= 1.3 });
} finally {
  bare.kill('SIGTERM');
  await ours.stop();
  await database.close();
}
