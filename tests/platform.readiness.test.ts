import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DB, poolOf } from '../db/connection';
import { bearer, buildTestApp } from './support/app';
import { addLearner, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { type ServerProcess, startServerProcess } from './support/server-process';

// Busy is not down: readiness asks the database on a connection of its own, so a server whose
// pool is saturated stays in its load balancer's rotation, and a request that finds no free
// connection gets a 503 of its own (server_busy), counted and logged apart from the database's
// faults.

const database = useTestDatabase();

describe('a server whose every connection is busy', () => {
  let db: DB;
  let app: FastifyInstance;
  let readKey: string;
  const logLines: Record<string, any>[] = [];
  /** Transactions holding each connection of the two-connection pool, until released. */
  let release: () => void = () => undefined;

  beforeAll(async () => {
    const org = await createOrgWithKeys(database.db);
    readKey = org.readKey;
    await addLearner(database.db, org.orgId, { email: 'occupee@exemple.fr' });
    db = createDb(database.url, { poolSize: 2, connectTimeoutMs: 1000, queryTimeoutMs: 5000 });
    app = await buildTestApp(
      db,
      { rateLimitPerMinute: 100_000, logLevel: 'warn' },
      { logStream: { write: (line) => logLines.push(JSON.parse(line)) } },
    );
    // A first request opens both connections; then both are held.
    expect((await app.inject({ url: '/v1/users', headers: bearer(readKey) })).statusCode).toBe(200);
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    for (let i = 0; i < 2; i += 1) void db.transaction().execute(() => released);
    const { pool } = poolOf(db);
    while (!(pool.totalCount === 2 && pool.idleCount === 0)) await new Promise((resolve) => setTimeout(resolve, 10));
  });
  afterAll(async () => {
    release();
    await app.close();
    await db.destroy();
  });

  it('is still ready: the probe has its own connection', async () => {
    for (let i = 0; i < 5; i += 1) {
      const ready = await app.inject({ url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toEqual({ statut: 'prêt' });
    }
  });

  it('answers a request that found no free connection in time with its own 503, logged and counted apart', async () => {
    // One scrape at a time: a scrape reads the webhook queue from the database, and waits too.
    const scrape = async () => {
      const body = (await app.inject({ url: '/metrics' })).body;
      return (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(body)?.[1] ?? 'NaN');
    };
    const counted = await scrape();
    const response = await app.inject({ url: '/v1/users', headers: bearer(readKey) });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.json().error).toMatch(/^Serveur momentanément saturé/);
    const recounted = await scrape();
    // The request's wait and refusal, and the first scrape's own (the second counts after it reads).
    expect(recounted('partner_api_db_pool_refusals_total')).toBe(counted('partner_api_db_pool_refusals_total') + 2);
    expect(recounted('partner_api_db_pool_waits_total')).toBe(counted('partner_api_db_pool_waits_total') + 2);
    expect(recounted('partner_api_db_pool_wait_seconds_total') - counted('partner_api_db_pool_wait_seconds_total')).toBeGreaterThan(1.5);
    expect(recounted('partner_api_db_pool_connections')).toBe(2);
    expect(recounted('partner_api_db_pool_idle_connections')).toBe(0);
    expect(logLines.some((line) => /pool de connexions à la base saturé/.test(line.msg))).toBe(true);
    expect(logLines.some((line) => /base de données indisponible/.test(line.msg))).toBe(false);
  });
});

describe('readiness of a real server', () => {
  let server: ServerProcess;
  let readKey: string;
  beforeAll(async () => {
    const org = await createOrgWithKeys(database.db);
    readKey = org.readKey;
    // Enough learners for exports that hold their connection a while.
    await sql`
      with new_accounts as (
        insert into accounts (email, name)
        select 'charge' || i || '@exemple.fr', 'Apprenant ' || i from generate_series(1, 3000) i returning id
      )
      insert into memberships (org_id, account_id, status, joined_at) select ${org.orgId}, id, 'actif', now() from new_accounts`.execute(
      database.db,
    );
    server = await startServerProcess(database.url, { RATE_LIMIT_PER_MINUTE: '1000000', DB_CONNECT_TIMEOUT_MS: '1000' });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('answers 200 to every probe under an overload of 400 clients while the database is up', async () => {
    const readyz = server.baseUrl.replace(/\/v1$/, '/readyz');
    const probes: number[] = [];
    let loading = true;
    const probing = (async () => {
      while (loading) {
        probes.push((await fetch(readyz, { signal: AbortSignal.timeout(5000) })).status);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const agent = { headers: bearer(readKey) };
    // 400 clients, each sending its next request as soon as its last is answered, for 6 s.
    const until = Date.now() + 6000;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 400 }, async (_, client) => {
        for (let request = 0; Date.now() < until; request += 1) {
          const exporting = (client + request) % 4 === 0;
          const response = await fetch(`${server.baseUrl}/users?limit=50&offset=${request % 10}${exporting ? '&format=csv' : ''}`, agent);
          await response.arrayBuffer();
          statuses.push(response.status);
        }
      }),
    );
    loading = false;
    await probing;
    // Every answer is a page, or a 503 with Retry-After: never another failure.
    expect(new Set(statuses.filter((status) => status !== 200 && status !== 503))).toEqual(new Set());
    // The pool was saturated meanwhile.
    const metrics = await (await fetch(server.baseUrl.replace(/\/v1$/, '/metrics'))).text();
    expect(Number(/^partner_api_db_pool_waits_total (\S+)$/m.exec(metrics)![1])).toBeGreaterThan(0);
    expect(probes.length).toBeGreaterThan(3);
    expect(new Set(probes)).toEqual(new Set([200]));
    // The database's own view: the probe's connection is there, apart from the pool's.
    const probe = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity where application_name = 'partner-api-health' and datname = current_database()`.execute(
      database.db,
    );
    expect(probe.rows[0]!.n).toBe(1);
  }, 120_000);
});
