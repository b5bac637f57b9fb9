import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DB } from '../db/connection';
import { migrateToLatest } from '../db/migrate';
import { createEndpoint } from '../db/webhook-endpoints';
import { type EventData, recordEvent } from '../db/webhooks';
import { type RunningPostgres, serverUrlFor, startEmbeddedPostgres } from '../src/local/embedded-postgres';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { listenHeartbeatStatement } from '../src/webhooks/worker';
import { anErrorBody } from './support/app';
import { addLearner, createKey, createOrgWithKeys } from './support/factories';
import { seededOrganisation } from './support/learning-factories';
import { useTestDatabase } from './support/lifecycle';
import { freePort } from './support/ports';
import { runAdminIntoSlowPipe, type ServerProcess, startServerProcess } from './support/server-process';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy';
import { startWebhookReceiver } from './support/webhook-receiver';

// Fault drills through real processes: PostgreSQL stopped, restarted and frozen under a running
// server; the network to it cut without a word (a partition: a proxy that black-holes) or reset;
// a server stopped (SIGTERM) with connections that will not end by themselves, or whose stop
// hangs (the watchdog, a second signal); and the operator commands writing more than a pipe holds.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function call(server: ServerProcess, key: string | null, path = '/users?limit=1') {
  const started = Date.now();
  // The operators' routes are at the root, the API below /v1.
  const url = /^\/(livez|readyz|metrics)/.test(path) ? server.baseUrl.replace(/\/v1$/, '') + path : server.baseUrl + path;
  const response = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null, ms: Date.now() - started };
}

/** Calls until `accept` holds (or the time is up): the first answer that does. */
async function until(action: () => Promise<{ status: number }>, accept: (answer: { status: number }) => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await action().catch((error) => ({ status: -1, error }));
    if (accept(answer) || Date.now() > deadline) return answer;
    await sleep(200);
  }
}

describe('PostgreSQL stopped, restarted and frozen under a running server', () => {
  let dataDir: string;
  let port: number;
  let cluster: RunningPostgres;
  let db: DB;
  let server: ServerProcess;
  let key: string;
  const databaseName = 'faults';

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'partner-api-faults-pg-'));
    await chmod(dataDir, 0o755);
    port = await freePort();
    cluster = await startEmbeddedPostgres({ databaseDir: path.join(dataDir, 'data'), port, persistent: true });
    const admin = new pg.Client({ connectionString: cluster.serverUrl });
    await admin.connect();
    await admin.query(`create database ${databaseName}`);
    await admin.end();
    db = createDb(serverUrlFor(port, databaseName), { poolSize: 2 });
    await migrateToLatest(db);
    const org = await createOrgWithKeys(db);
    key = org.readKey;
    await addLearner(db, org.orgId, { email: 'claire@exemple.fr' });
    server = await startServerProcess(serverUrlFor(port, databaseName), {
      DB_CONNECT_TIMEOUT_MS: '1000',
      DB_QUERY_TIMEOUT_MS: '1500',
      REQUEST_TIMEOUT_MS: '5000',
      LOG_LEVEL: 'warn',
    });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await db?.destroy();
    await cluster?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  // The webhook worker's LISTEN connection, once it listens: its last statement is the LISTEN, or
  // the check the worker runs every 5 s on that connection only once it listens (a test that looked
  // for the LISTEN alone failed whenever a check ran before it looked).
  const listening = async () =>
    (
      await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
    where application_name = 'partner-api-webhooks-listen' and (query ilike 'listen %' or query = ${listenHeartbeatStatement})`.execute(db)
    ).rows[0]!.n;

  it('answers 503 with Retry-After within seconds while PostgreSQL is down, and serves again, LISTEN included, once it is back', async () => {
    expect((await call(server, key)).status).toBe(200);
    expect(await listening()).toBe(1);

    await db.destroy();
    await cluster.stop();
    const down = await call(server, key);
    expect(down.status).toBe(503);
    expect(Number(down.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(down.body).toEqual(anErrorBody(expect.stringMatching(/base de données/)));
    expect(down.ms).toBeLessThan(4000);
    expect((await call(server, null, '/readyz')).status).toBe(503);
    expect((await call(server, null, '/livez')).status).toBe(200);

    cluster = await startEmbeddedPostgres({ databaseDir: path.join(dataDir, 'data'), port, persistent: true });
    db = createDb(serverUrlFor(port, databaseName), { poolSize: 2 });
    const back = await until(
      () => call(server, key),
      (answer) => answer.status === 200,
      15_000,
    );
    expect(back.status).toBe(200);
    expect((await call(server, null, '/readyz')).status).toBe(200);
    // The webhook worker listens again, without a restart of the server.
    const relistened = await until(
      async () => ({ status: await listening() }),
      (answer) => answer.status === 1,
      15_000,
    );
    expect(relistened.status).toBe(1);
    expect(server.child.exitCode).toBeNull();
  }, 60_000);

  it('answers 503 within seconds while PostgreSQL is frozen, and serves again when it thaws', async () => {
    expect((await call(server, key)).status).toBe(200);
    // The postmaster and every backend, stopped as a paused machine would be.
    const postmaster = Number(readFileSync(path.join(dataDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = (
      await new Promise<string>((resolve) => {
        let out = '';
        const ps = spawn('ps', ['-o', 'pid=', '--ppid', String(postmaster)]);
        ps.stdout.on('data', (chunk) => {
          out += chunk;
        });
        ps.on('close', () => resolve(out));
      })
    )
      .split('\n')
      .map(Number)
      .filter((pid) => pid > 0);
    const frozen = [postmaster, ...children];
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    try {
      const answers = await Promise.all([call(server, key), call(server, key, '/summary')]);
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(answer.ms).toBeLessThan(6000);
      }
      expect((await call(server, null, '/readyz')).status).toBe(503);
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
    }
    const thawed = await until(
      () => call(server, key),
      (answer) => answer.status === 200,
      15_000,
    );
    expect(thawed.status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  }, 60_000);
});

describe('a network partition between a running server and PostgreSQL (a proxy that black-holes)', () => {
  const database = useTestDatabase();
  let proxy: TcpProxy;
  let throughProxy: string;
  let server: ServerProcess;
  // Servers a test stops itself, killed after the last test if one is still running.
  const stoppedByTests: ServerProcess[] = [];
  let key: string;
  const poolSize = 20; // src/context.ts
  // One key each: the requests of one key share one statement in flight (src/http/request-counter.ts),
  // so only distinct keys take as many connections as there are requests.
  let keys: string[];
  /** When the partition test let the network through again. */
  let networkBackAt: Date;
  const environment = {
    DB_CONNECT_TIMEOUT_MS: '1000',
    DB_QUERY_TIMEOUT_MS: '1500',
    REQUEST_TIMEOUT_MS: '5000',
    RATE_LIMIT_PER_MINUTE: '100000',
    WEBHOOK_ALLOW_INSECURE: '1',
    LOG_LEVEL: 'warn',
  };

  beforeAll(async () => {
    const org = await createOrgWithKeys(database.db);
    key = org.readKey;
    await addLearner(database.db, org.orgId, { email: 'claire@exemple.fr' });
    keys = await Promise.all(Array.from({ length: poolSize + 10 }, async () => (await createKey(database.db, org.orgId, ['read'])).key));
    const direct = new URL(database.url);
    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port) });
    const url = new URL(database.url);
    url.port = String(proxy.port);
    throughProxy = url.toString();
    server = await startServerProcess(throughProxy, environment);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([server, ...stoppedByTests].map((each) => each?.stop('SIGKILL')));
    await proxy?.close();
  });

  /** A request for each key at once (more than the pool holds): their statuses, and the slowest time. */
  async function burst() {
    const answers = await Promise.all(keys.map((each) => call(server, each)));
    return { statuses: new Set(answers.map((answer) => answer.status)), slowestMs: Math.max(...answers.map((answer) => answer.ms)) };
  }

  it('answers 503 within seconds while black-holed, more requests than the pool holds included, and the same process serves every request again once the network is back', async () => {
    // Every connection of the pool open, so that the partition catches them all.
    expect((await burst()).statuses).toEqual(new Set([200]));

    proxy.blackHole();
    const cut = await call(server, key);
    expect(cut.status).toBe(503);
    expect(Number(cut.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(cut.ms).toBeLessThan(4000);
    expect((await call(server, null, '/readyz')).status).toBe(503);
    // The pool saturated: each answered fast, none hangs.
    const saturated = await burst();
    expect(saturated.statuses).toEqual(new Set([503]));
    expect(saturated.slowestMs).toBeLessThan(6000);

    proxy.restore();
    const restoredAt = Date.now();
    networkBackAt = new Date(restoredAt);
    const back = await until(
      () => call(server, key),
      (answer) => answer.status === 200,
      10_000,
    );
    expect(back.status).toBe(200);
    const recoveryMs = Date.now() - restoredAt;
    expect(recoveryMs).toBeLessThan(5000);
    // No connection left in the pool that the partition caught: every request of a burst larger
    // than the pool is served, and fast (one that got such a connection would wait for its timeout).
    const after = await burst();
    expect(after.statuses).toEqual(new Set([200]));
    expect(after.slowestMs).toBeLessThan(2000);
    expect((await call(server, null, '/readyz')).status).toBe(200);
    expect(server.child.exitCode).toBeNull();
    console.info(
      `partition: first 503 in ${cut.ms} ms, ${poolSize + 10} at once all 503 within ${saturated.slowestMs} ms; ` +
        `back: 200 after ${recoveryMs} ms, then ${poolSize + 10} at once all 200 within ${after.slowestMs} ms`,
    );
  }, 60_000);

  // The webhook worker's own connections (pg-boss's pool, the LISTEN one) were caught by the
  // partition too: they give up on their time limits and are opened again.
  it('delivers webhooks again once the network is back, and listens for commits on a new connection', async () => {
    // The LISTEN connection caught by the partition stays silent; its periodic check finds it
    // dead and a new one listens (5 s between checks, 2.5 s to give up here).
    const listening = async () =>
      (
        await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where application_name = 'partner-api-webhooks-listen' and backend_start > ${networkBackAt}`.execute(database.db)
      ).rows[0]!.n;
    const deadline = Date.now() + 15_000;
    while ((await listening()) === 0 && Date.now() < deadline) await sleep(250);
    expect(await listening()).toBe(1);
    const receiver = await startWebhookReceiver();
    const org = await createOrgWithKeys(database.db);
    await createEndpoint(database.db, {
      orgId: org.orgId,
      url: receiver.url,
      secret: generateWebhookSecret(),
      eventTypes: ['learner.enrolled'],
    });
    const data = { learner: null, status: 'pending', programmes: [] } as unknown as EventData<'learner.enrolled'>;
    try {
      const recordedAt = Date.now();
      await recordEvent(database.db, { orgId: org.orgId, type: 'learner.enrolled', data });
      await receiver.waitFor((received) => received.length >= 1, 10_000);
      expect(Date.now() - recordedAt).toBeLessThan(10_000);
    } finally {
      await receiver.close();
    }
  }, 30_000);

  it('lives on when its connections are reset while their queries run, and answers 503 meanwhile', async () => {
    proxy.blackHole();
    const inFlight = Promise.all([call(server, key), call(server, key, '/summary')]);
    await sleep(300);
    proxy.resetClients();
    const answers = await inFlight;
    expect(answers.map((answer) => answer.status)).toEqual([503, 503]);
    proxy.restore();
    const back = await until(
      () => call(server, key),
      (answer) => answer.status === 200,
      10_000,
    );
    expect(back.status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  }, 30_000);

  // What holds these stops is the webhook worker closing its connections across the partition:
  // their end is never acknowledged, as when the network is really cut.
  it('leaves at once, code 1, on a second signal while stopping; a repeat within a second is the same Ctrl-C', async () => {
    const stopping = await startServerProcess(throughProxy, { ...environment, SHUTDOWN_TIMEOUT_MS: '10000' });
    stoppedByTests.push(stopping);
    proxy.blackHole();
    try {
      const exited = new Promise<number | null>((resolve) => stopping.child.once('exit', resolve));
      stopping.child.kill('SIGTERM');
      // From a terminal, npm passes Ctrl-C on to the server, which also gets it directly.
      stopping.child.kill('SIGTERM');
      await sleep(1500);
      expect(stopping.child.exitCode).toBeNull();
      const secondAt = Date.now();
      stopping.child.kill('SIGINT');
      expect(await exited).toBe(1);
      expect(Date.now() - secondAt).toBeLessThan(1000);
      expect(stopping.output()).toMatch(/SIGINT reçu pendant l’arrêt : sortie immédiate/);
    } finally {
      proxy.restore();
    }
  }, 30_000);

  it('leaves, code 1, when stopping outlasts SHUTDOWN_TIMEOUT_MS by its margin (3 s)', async () => {
    const stopping = await startServerProcess(throughProxy, { ...environment, SHUTDOWN_TIMEOUT_MS: '1000' });
    stoppedByTests.push(stopping);
    // A request served first leaves a connection open in the pool: ending it across the partition is
    // what holds this stop (without it, whether the worker's connections hold it depends on timing).
    expect((await call(stopping, key)).status).toBe(200);
    proxy.blackHole();
    try {
      const started = Date.now();
      expect(await stopping.stop('SIGTERM')).toBe(1);
      const ms = Date.now() - started;
      expect(ms).toBeGreaterThanOrEqual(1000 + 3000 - 100);
      expect(ms).toBeLessThan(1000 + 3000 + 1500);
      expect(stopping.output()).toMatch(/arrêt toujours en cours après 4 s : sortie forcée/);
      console.info(`stop held by the partition: forced exit after ${ms} ms (SHUTDOWN_TIMEOUT_MS 1000 + 3000)`);
    } finally {
      proxy.restore();
    }
  }, 30_000);
});

describe('SIGTERM', () => {
  const database = useTestDatabase();
  let readKey: string;

  beforeAll(async () => {
    // Enough data for an export that fills the socket buffers of a client that stops reading.
    readKey = (await seededOrganisation(database.db, { name: 'Formations Export', learners: 1500, seed: 5 })).readKey;
  }, 120_000);

  /** Sends SIGTERM and measures how long the process takes to exit, and with which code. */
  async function terminate(server: ServerProcess): Promise<{ code: number | null; ms: number }> {
    const started = Date.now();
    const code = await server.stop('SIGTERM');
    return { code, ms: Date.now() - started };
  }

  it('exits within the deadline, code 0, with an idle keep-alive connection and with a client that stopped reading', async () => {
    const server = await startServerProcess(database.url, { SHUTDOWN_TIMEOUT_MS: '2000' });
    const { hostname, port } = new URL(server.baseUrl);
    // A finished request whose client keeps the connection open.
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      httpRequest(
        { host: hostname, port, path: '/v1/users?limit=1', agent, headers: { authorization: `Bearer ${readKey}` } },
        (response) => {
          response.resume();
          response.on('end', resolve);
        },
      )
        .on('error', reject)
        .end();
    });
    // A large export whose client reads nothing after the request.
    const stalled = connect({ host: hostname, port: Number(port) });
    await new Promise((resolve) => stalled.once('connect', resolve));
    stalled.write(`GET /v1/quiz-answers?format=csv&year=2026 HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${readKey}\r\n\r\n`);
    stalled.pause();
    stalled.on('error', () => undefined);
    await sleep(1500);

    const { code, ms } = await terminate(server);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(2000 + 4000);
    expect(server.output()).toMatch(/fermées/);
    agent.destroy();
    stalled.destroy();
  }, 60_000);

  it('answers the requests in flight, refuses new ones on open connections with 503, and exits promptly when nothing holds it', async () => {
    const server = await startServerProcess(database.url, { SHUTDOWN_TIMEOUT_MS: '10000' });
    const inFlight = fetch(`${server.baseUrl}/quiz-answers?format=csv&year=2026`, { headers: { authorization: `Bearer ${readKey}` } }).then(
      async (response) => ({ status: response.status, size: (await response.arrayBuffer()).byteLength }),
    );
    await sleep(100);
    const { code, ms } = await terminate(server);
    const finished = await inFlight;
    expect(finished.status).toBe(200);
    expect(finished.size).toBeGreaterThan(100_000);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(10_000);
  }, 60_000);
});

describe('operator commands', () => {
  const database = useTestDatabase();

  it('write their whole output into a pipe read slowly, well beyond 64 KiB, and exit 0', async () => {
    const { orgId } = await createOrgWithKeys(database.db);
    for (let i = 0; i < 700; i += 1) await createKey(database.db, orgId, ['read']);
    const { code, output } = await runAdminIntoSlowPipe(`key list --org ${orgId} --json`, database.url);
    expect(output.length).toBeGreaterThan(64 * 1024);
    expect(JSON.parse(output).keys).toHaveLength(702);
    expect(code).toBe(0);
  }, 60_000);
});
