import { sql } from 'kysely';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { advisoryLocks } from '../db/connection';
import { createEndpoint } from '../db/webhook-endpoints';
import {
  type AttemptJob,
  deliveryQueue,
  type EventData,
  installDeliveryQueue,
  kyselyExecutor,
  recordEvent,
  recordEvents,
  takeDueDeliveries,
} from '../db/webhooks';
import { operatorActor } from '../scripts/command';
import type { Config } from '../src/config';
import { resumeWebhookEndpoint, suspendWebhookEndpoint } from '../src/webhook-endpoints';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { attemptExpirySeconds, startWebhookDelivery, type WebhookDelivery } from '../src/webhooks/worker';
import { bearer, buildTestApp, testConfig } from './support/app';
import { addLicences, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { eventually, startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

// The pg-boss jobs of deliveries: a job is one attempt of one delivery, and a pending delivery names
// the job of its next attempt, the only one that may make it.

const database = useTestDatabase();
let orgId: string;
let writeKey: string;
const running: { workers: WebhookDelivery[]; receiver?: WebhookReceiver } = { workers: [] };

beforeAll(async () => {
  ({ orgId, writeKey } = await createOrgWithKeys(database.db));
  await installDeliveryQueue(database.db);
});
// Each test starts from no endpoint, no delivery and no job.
beforeEach(async () => {
  await sql`delete from webhook_endpoints`.execute(database.db);
  await sql`delete from pgboss.job where name = ${deliveryQueue}`.execute(database.db);
});
afterEach(async () => {
  await Promise.all(running.workers.map((worker) => worker.stop()));
  await running.receiver?.close();
  running.workers = [];
  delete running.receiver;
});

async function startWorker(overrides: Partial<Config> = {}, options: { workers?: number; batchSize?: number } = {}) {
  const worker = await startWebhookDelivery({
    connectionString: database.url,
    db: database.db,
    config: testConfig({ webhookAllowInsecure: true, ...overrides }),
    ...options,
  });
  running.workers.push(worker);
  return worker;
}

async function newEndpoint(url = 'https://hooks.exemple.fr/partenaire') {
  return createEndpoint(database.db, { orgId, url, secret: generateWebhookSecret(), eventTypes: ['learner.enrolled'] });
}

const enrolled = () => ({
  orgId,
  type: 'learner.enrolled' as const,
  data: { learner: null, status: 'pending', programmes: [] } satisfies EventData<'learner.enrolled'>,
});

async function deliveriesOf(endpointId: string) {
  return database.db
    .selectFrom('webhook_deliveries')
    .select(['id', 'job_id', 'status', 'attempt_count', 'next_attempt_at'])
    .where('endpoint_id', '=', endpointId)
    .orderBy('created_at')
    .execute();
}

/** The delivery queue's jobs in one state, with when they start (seconds from now). */
async function jobsIn(state: 'created' | 'active' | 'completed') {
  const { rows } = await sql<{ id: string; data: AttemptJob; start_after: Date; starts_in: number }>`
    select id, data, start_after, extract(epoch from start_after - now())::float8 as starts_in
    from pgboss.job where name = ${deliveryQueue} and state = ${state}::pgboss.job_state
    order by start_after, id`.execute(database.db);
  return rows;
}

/** Whether these jobs are still in the queue, in any state. */
async function existing(jobIds: string[]) {
  const { rows } = await sql<{
    id: string;
  }>`select id from pgboss.job where name = ${deliveryQueue} and id = any(${jobIds}::uuid[])`.execute(database.db);
  return rows.map((row) => row.id);
}

/** Until pg-boss holds no job that is waiting or being worked on. */
async function untilIdle() {
  await eventually(
    async () => [...(await jobsIn('created')), ...(await jobsIn('active'))],
    (jobs) => jobs.length === 0,
  );
}

/** Jobs written straight to the queue, as a late duplicate would be: pg-boss's own insert, never started. */
async function insertJobs(jobs: { id?: string; deliveryId: string }[]) {
  const boss = new PgBoss({ db: kyselyExecutor(database.db), supervise: false, schedule: false });
  await boss.insert(jobs.map((job) => ({ ...(job.id ? { id: job.id } : {}), name: deliveryQueue, data: { deliveryId: job.deliveryId } })));
}

const sorted = (ids: string[]) => [...ids].sort();

describe('the jobs of recorded events', () => {
  it('each delivery gets a job of its own, due at once, which it names', async () => {
    const [first, second] = [await newEndpoint(), await newEndpoint()];
    await recordEvents(
      database.db,
      Array.from({ length: 20 }, () => enrolled()),
    );
    const deliveries = [...(await deliveriesOf(first.id)), ...(await deliveriesOf(second.id))];
    expect(deliveries).toHaveLength(40);
    const jobs = await jobsIn('created');
    expect(sorted(jobs.map((job) => job.id))).toEqual(sorted(deliveries.map((delivery) => delivery.job_id!)));
    const namedBy = new Map(deliveries.map((delivery) => [delivery.job_id, delivery.id]));
    expect(jobs.filter((job) => namedBy.get(job.id) !== job.data.deliveryId)).toEqual([]);
    expect(Math.max(...jobs.map((job) => job.starts_in))).toBeLessThanOrEqual(0);
  });

  it('gives the recorded events in the order given, each with its own body', async () => {
    await newEndpoint();
    const statuses = ['active', 'pending', 'active'] as const;
    const recorded = await recordEvents(
      database.db,
      statuses.map((status) => ({ ...enrolled(), data: { learner: null, status, programmes: [] } })),
    );
    expect(recorded.map((event) => JSON.parse(event.body).data.status)).toEqual(statuses);
    expect(recorded.map((event) => JSON.parse(event.body).id)).toEqual(recorded.map((event) => event.id));
  });

  it('a bulk enrolment commits a job for each of its deliveries', async () => {
    const endpoint = await newEndpoint();
    await addLicences(database.db, orgId, 'standard', 5);
    const app = await buildTestApp(database.db);
    try {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/users',
        headers: bearer(writeKey),
        payload: { users: Array.from({ length: 5 }, (_, n) => ({ email: `lot${n}@exemple.fr` })) },
      });
      expect(response.json().summary).toEqual({ requested: 5, enrolled: 5, failed: 0 });
    } finally {
      await app.close();
    }
    const deliveries = await deliveriesOf(endpoint.id);
    expect(deliveries).toHaveLength(5);
    expect(sorted((await jobsIn('created')).map((job) => job.data.deliveryId))).toEqual(sorted(deliveries.map((d) => d.id)));
  });

  it('a job rolled back to a savepoint goes with its delivery: a later event gets a job that commits', async () => {
    const endpoint = await newEndpoint();
    await database.db.transaction().execute(async (trx) => {
      await sql`savepoint before_first`.execute(trx);
      await recordEvent(trx, enrolled());
      await sql`rollback to savepoint before_first`.execute(trx);
      await recordEvent(trx, enrolled());
    });
    const deliveries = await deliveriesOf(endpoint.id);
    expect(deliveries).toHaveLength(1);
    expect((await jobsIn('created')).map((job) => [job.id, job.data.deliveryId])).toEqual([[deliveries[0]!.job_id, deliveries[0]!.id]]);
  });
});

describe('a job', () => {
  it('attempts only a pending delivery that names it: not a delivered one, nor one that names another job; each completes', async () => {
    running.receiver = await startWebhookReceiver();
    const endpoint = await newEndpoint(running.receiver.url);
    for (let n = 0; n < 3; n += 1) await recordEvent(database.db, enrolled());
    const [delivered, renamed, due] = await deliveriesOf(endpoint.id);
    await sql`update webhook_deliveries set status = 'delivered', delivered_at = now() where id = ${delivered!.id}`.execute(database.db);
    // A replay since, say: the delivery names a job that is not this one.
    await sql`update webhook_deliveries set job_id = gen_random_uuid() where id = ${renamed!.id}`.execute(database.db);

    await startWorker();
    await running.receiver.waitFor((received) => received.length === 1);
    await untilIdle();
    // The jobs that attempted nothing complete; the one that attempted ended with the record of its attempt.
    expect(sorted((await jobsIn('completed')).map((job) => job.id))).toEqual(sorted([delivered!.job_id!, renamed!.job_id!]));
    expect(await existing([due!.job_id!])).toEqual([]);
    expect(running.receiver.received.map((r) => r.deliveryId)).toEqual([due!.id]);
    const attempts = await database.db.selectFrom('webhook_attempts').select('delivery_id').execute();
    expect(attempts.map((a) => a.delivery_id)).toEqual([due!.id]);
  });

  it('duplicates of its job, taken at the same time by two workers, never attempt a delivery twice', async () => {
    running.receiver = await startWebhookReceiver(() => ({ status: 200, delayMs: 30 }));
    const endpoint = await newEndpoint(running.receiver.url);
    await recordEvents(
      database.db,
      Array.from({ length: 60 }, () => enrolled()),
    );
    const deliveries = await deliveriesOf(endpoint.id);
    await insertJobs(
      deliveries.flatMap((delivery) => [{ deliveryId: delivery.id }, { deliveryId: delivery.id }, { deliveryId: delivery.id }]),
    );
    expect(await jobsIn('created')).toHaveLength(240);

    await Promise.all([startWorker({}, { batchSize: 7 }), startWorker({}, { batchSize: 7 })]);
    await untilIdle();
    expect(await jobsIn('completed')).toHaveLength(180);
    expect(running.receiver.overlaps).toEqual([]);
    expect(sorted(running.receiver.received.map((r) => r.deliveryId))).toEqual(sorted(deliveries.map((d) => d.id)));
    expect((await deliveriesOf(endpoint.id)).filter((d) => d.status !== 'delivered' || d.attempt_count !== 1)).toEqual([]);
  });

  it('that fails ends, and queues its retry as a new job starting after the delay, in the transaction that records the attempt', async () => {
    running.receiver = await startWebhookReceiver(() => ({ status: 503 }));
    const endpoint = await newEndpoint(running.receiver.url);
    await startWorker({ webhookRetryDelaysSeconds: [30, 30, 30, 30, 30] });
    await recordEvent(database.db, enrolled());
    const [first] = await deliveriesOf(endpoint.id);
    await running.receiver.waitFor((received) => received.length === 1);
    const [retry, ...others] = await eventually(
      () => jobsIn('created'),
      (jobs) => jobs.length > 0,
    );
    expect(others).toEqual([]);
    expect(retry!.data.deliveryId).toBe(first!.id);
    expect(retry!.starts_in).toBeGreaterThan(25);
    expect(retry!.starts_in).toBeLessThanOrEqual(30);
    const [afterFailure] = await deliveriesOf(endpoint.id);
    // The delivery names its retry, and shows when it starts.
    expect(afterFailure).toMatchObject({ status: 'pending', attempt_count: 1, job_id: retry!.id });
    expect(afterFailure!.job_id).not.toBe(first!.job_id);
    expect(afterFailure!.next_attempt_at).toEqual(retry!.start_after);
    expect(await existing([first!.job_id!])).toEqual([]);
  });

  it('that fails for the last time makes its delivery dead, and queues nothing', async () => {
    running.receiver = await startWebhookReceiver(() => ({ status: 500 }));
    const endpoint = await newEndpoint(running.receiver.url);
    await startWorker({ webhookRetryDelaysSeconds: [0.2] });
    await recordEvent(database.db, enrolled());
    const [dead] = await eventually(
      () => deliveriesOf(endpoint.id),
      (deliveries) => deliveries[0]?.status === 'dead',
    );
    expect(dead).toMatchObject({ attempt_count: 2, job_id: null });
    expect(running.receiver.received).toHaveLength(2);
    expect(await jobsIn('created')).toEqual([]);
  });
});

describe('an endpoint disabled', () => {
  it('sets aside the deliveries whose job comes meanwhile; enabled again, those go at once and a planned retry keeps its time', async () => {
    let status = 503;
    running.receiver = await startWebhookReceiver(() => ({ status }));
    const endpoint = await newEndpoint(running.receiver.url);
    const worker = await startWorker({ webhookRetryDelaysSeconds: [3600, 3600, 3600, 3600, 3600] });
    await recordEvent(database.db, enrolled());
    const [planned] = await eventually(
      () => deliveriesOf(endpoint.id),
      (deliveries) => deliveries[0]?.attempt_count === 1,
    );
    await worker.stop();
    running.workers = [];
    // Two deliveries whose jobs are due, and the endpoint disabled before a worker takes them.
    await recordEvent(database.db, enrolled());
    await recordEvent(database.db, enrolled());
    await suspendWebhookEndpoint(database.db, endpoint.org_id, endpoint.id, operatorActor);
    status = 200;

    await startWorker();
    const [, ...setAside] = await eventually(
      () => deliveriesOf(endpoint.id),
      (deliveries) => deliveries.length === 3 && deliveries.slice(1).every((d) => d.job_id === null),
    );
    expect(setAside.map((d) => [d.status, d.attempt_count])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
    expect(running.receiver.received.map((r) => r.deliveryId)).toEqual([planned!.id]);
    const [retry] = await jobsIn('created');
    expect(retry).toMatchObject({ id: planned!.job_id, data: { deliveryId: planned!.id } });

    expect(await resumeWebhookEndpoint(database.db, endpoint.org_id, endpoint.id, operatorActor)).toMatchObject({
      enabled: true,
      resumed_deliveries: 3,
    });
    await running.receiver.waitFor((received) => received.length === 3);
    expect(sorted(running.receiver.received.slice(1).map((r) => r.deliveryId))).toEqual(sorted(setAside.map((d) => d.id)));
    // The retry planned in an hour kept its job and its time.
    const [kept, ...others] = await jobsIn('created');
    expect(others).toEqual([]);
    expect(kept).toMatchObject({ id: planned!.job_id, start_after: retry!.start_after });
    expect(kept!.starts_in).toBeGreaterThan(3500);
    await eventually(
      () => deliveriesOf(endpoint.id),
      (deliveries) => deliveries.map((d) => d.status).join() === 'pending,delivered,delivered',
    );
  });

  it('being enabled while a job of its delivery comes: the job waits for the outcome, and attempts, rather than set it aside', async () => {
    const endpoint = await newEndpoint();
    await recordEvent(database.db, enrolled());
    const [delivery] = await deliveriesOf(endpoint.id);
    await suspendWebhookEndpoint(database.db, endpoint.org_id, endpoint.id, operatorActor);
    const job = { id: delivery!.job_id!, data: { deliveryId: delivery!.id } };

    // Another process enables the endpoint, and has not committed yet.
    const otherProcess = new pg.Client({ connectionString: database.url });
    await otherProcess.connect();
    try {
      await otherProcess.query('begin');
      await otherProcess.query(
        'update webhook_endpoints set enabled = true, disabled_at = null, disabled_reason = null, consecutive_failures = 0 where id = $1',
        [endpoint.id],
      );
      let taken: Awaited<ReturnType<typeof takeDueDeliveries>> | null = null;
      const taking = takeDueDeliveries(database.db, [job]).then((due) => {
        taken = due;
      });
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(taken).toBeNull();
      await otherProcess.query('commit');
      await taking;
      expect(taken!.map((due) => [due.id, due.job_id])).toEqual([[delivery!.id, delivery!.job_id]]);
    } finally {
      await otherProcess.end();
    }
    expect((await deliveriesOf(endpoint.id))[0]!.job_id).toBe(delivery!.job_id);
  });
});

describe('the delivery queue', () => {
  const queues = async () =>
    (await sql<{ n: number }>`select count(*)::int as n from pgboss.queue where name = ${deliveryQueue}`.execute(database.db)).rows[0]!.n;

  it("is created one process at a time, under an advisory lock: pg-boss's own creation could deadlock when two servers started together", async () => {
    await sql`select pgboss.delete_queue(${deliveryQueue})`.execute(database.db);
    // Another process creating the queue holds the lock.
    const otherProcess = new pg.Client({ connectionString: database.url });
    await otherProcess.connect();
    let installing: Promise<void> | undefined;
    try {
      await otherProcess.query('select pg_advisory_lock($1)', [advisoryLocks.deliveryQueueCreation]);
      let installed = false;
      installing = installDeliveryQueue(database.db).then(() => {
        installed = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(installed).toBe(false);
      expect(await queues()).toBe(0);
      await otherProcess.query('select pg_advisory_unlock($1)', [advisoryLocks.deliveryQueueCreation]);
      await installing;
      expect(await queues()).toBe(1);
      // Created once, it is left as it is: a second process's creation is a no-op.
      await installDeliveryQueue(database.db);
      expect(await queues()).toBe(1);
    } finally {
      await otherProcess.end();
      await installing;
    }
  });

  it('expires a job, for pg-boss to offer it again, once an attempt of the last worker started can no longer be in flight', async () => {
    const expiry = async () =>
      (await sql<{ expire_seconds: number }>`select expire_seconds from pgboss.queue where name = ${deliveryQueue}`.execute(database.db))
        .rows[0]!.expire_seconds;
    const config = { webhookTimeoutMs: 4000, databaseQueryTimeoutMs: 2000 };
    await startWorker(config);
    expect(attemptExpirySeconds(config)).toBe(4 + 2 * 3 + 5);
    expect(await expiry()).toBe(attemptExpirySeconds(config));
    // A command that makes sure the queue exists leaves it as the worker set it.
    await installDeliveryQueue(database.db);
    expect(await expiry()).toBe(attemptExpirySeconds(config));
  });

  it('gives a job to the pending deliveries of enabled endpoints that name none (recorded before deliveries named their jobs), each at its time', async () => {
    const [enabled, disabled] = [await newEndpoint(), await newEndpoint()];
    await recordEvent(database.db, enrolled());
    await recordEvent(database.db, enrolled());
    await suspendWebhookEndpoint(database.db, disabled.org_id, disabled.id, operatorActor);
    await sql`delete from pgboss.job where name = ${deliveryQueue}`.execute(database.db);
    await sql`update webhook_deliveries set job_id = null`.execute(database.db);
    const [overdue, later] = await deliveriesOf(enabled.id);
    await sql`update webhook_deliveries set next_attempt_at = now() + interval '1 hour' where id = ${later!.id}`.execute(database.db);

    await installDeliveryQueue(database.db);
    const jobs = await jobsIn('created');
    expect(jobs.map((job) => job.data.deliveryId)).toEqual([overdue!.id, later!.id]);
    expect(jobs[0]!.starts_in).toBeLessThanOrEqual(0);
    expect(jobs[1]!.starts_in).toBeGreaterThan(3590);
    expect((await deliveriesOf(enabled.id)).map((d) => d.job_id)).toEqual(jobs.map((job) => job.id));
    expect((await deliveriesOf(disabled.id)).map((d) => d.job_id)).toEqual([null, null]);
  });
});
