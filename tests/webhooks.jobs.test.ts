import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { advisoryLocks } from '../db/connection';
import {
  createEndpoint,
  type DeliveryJob,
  deliveryQueue,
  disableEndpoint,
  type EventData,
  enableEndpoint,
  installDeliveryQueue,
  queueDeliveryJobs,
  recordEvent,
  recordEvents,
  requeueOverdueDeliveries,
} from '../db/webhooks';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { startWebhookDelivery, type WebhookDelivery } from '../src/webhooks/worker';
import { bearer, buildTestApp, testConfig } from './support/app';
import { addLicences, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { eventually, startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

// The pg-boss jobs of deliveries: each carries the ids of many deliveries, and the delivery rows
// (status, due time, lease) decide what a job sends.

const database = useTestDatabase();
let orgId: string;
let writeKey: string;
const running: { worker?: WebhookDelivery; receiver?: WebhookReceiver } = {};

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
  await running.worker?.stop();
  await running.receiver?.close();
  delete running.worker;
  delete running.receiver;
});

async function newEndpoint(url = 'https://hooks.exemple.fr/partenaire') {
  return createEndpoint(database.db, { orgId, url, secret: generateWebhookSecret(), eventTypes: ['learner.enrolled'] });
}

const enrolled = () => ({
  orgId,
  type: 'learner.enrolled' as const,
  data: { learner: null, status: 'pending', programmes: [] } satisfies EventData<'learner.enrolled'>,
});

async function deliveryIdsOf(endpointId: string): Promise<string[]> {
  const rows = await database.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', endpointId).execute();
  return rows.map((row) => row.id);
}

/** The waiting jobs that list any of these deliveries, with when they start (seconds from now). */
async function waitingJobsOf(deliveryIds: string[]) {
  const { rows } = await sql<{ data: DeliveryJob; singleton_key: string; starts_in: number }>`
    select data, singleton_key, extract(epoch from start_after - now())::float8 as starts_in
    from pgboss.job
    where name = ${deliveryQueue} and state = 'created'
      and exists (select from jsonb_array_elements_text(data->'deliveryIds') as listed(id) where listed.id = any(${deliveryIds}::text[]))
    order by start_after`.execute(database.db);
  return rows;
}

const sorted = (ids: string[]) => [...ids].sort();

/** `count` events recorded together, to two endpoints: the deliveries of both. */
async function recordedToTwoEndpoints(count: number): Promise<string[]> {
  const [first, second] = [await newEndpoint(), await newEndpoint()];
  await recordEvents(
    database.db,
    Array.from({ length: count }, () => enrolled()),
  );
  return [...(await deliveryIdsOf(first.id)), ...(await deliveryIdsOf(second.id))];
}

describe('the jobs of recorded events', () => {
  it('the deliveries of events recorded together make one job, to every endpoint', async () => {
    const deliveries = await recordedToTwoEndpoints(20);
    expect(deliveries).toHaveLength(40);
    const jobs = await waitingJobsOf(deliveries);
    expect(jobs).toHaveLength(1);
    expect(sorted(jobs[0]!.data.deliveryIds)).toEqual(sorted(deliveries));
  });

  it('past 1,000 deliveries, further jobs, each delivery listed once', async () => {
    const deliveries = await recordedToTwoEndpoints(600);
    const jobs = await waitingJobsOf(deliveries);
    expect(jobs.map((job) => job.data.deliveryIds.length).sort((a, b) => b - a)).toEqual([1000, 200]);
    expect(sorted(jobs.flatMap((job) => job.data.deliveryIds))).toEqual(sorted(deliveries));
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

  it('a bulk enrolment records its events together: one job for the batch', async () => {
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
    const deliveries = await deliveryIdsOf(endpoint.id);
    expect(deliveries).toHaveLength(5);
    expect((await waitingJobsOf(deliveries)).map((job) => sorted(job.data.deliveryIds))).toEqual([sorted(deliveries)]);
  });

  it('a job rolled back to a savepoint goes with its deliveries: a later event gets a job that commits', async () => {
    const endpoint = await newEndpoint();
    await database.db.transaction().execute(async (trx) => {
      await sql`savepoint before_first`.execute(trx);
      await recordEvent(trx, enrolled());
      await sql`rollback to savepoint before_first`.execute(trx);
      await recordEvent(trx, enrolled());
    });
    const deliveries = await deliveryIdsOf(endpoint.id);
    expect(deliveries).toHaveLength(1);
    expect((await waitingJobsOf(deliveries)).map((job) => job.data.deliveryIds)).toEqual([deliveries]);
  });
});

describe('a job', () => {
  it('sends only what is still pending, due and free: not a delivered one, one not yet due, one leased', async () => {
    running.receiver = await startWebhookReceiver();
    const endpoint = await createEndpoint(database.db, {
      orgId,
      url: running.receiver.url,
      secret: generateWebhookSecret(),
      eventTypes: ['learner.enrolled'],
    });
    for (let n = 0; n < 4; n += 1) await recordEvent(database.db, enrolled());
    const [delivered, notDue, leased, due] = await deliveryIdsOf(endpoint.id);
    await sql`delete from pgboss.job where name = ${deliveryQueue}`.execute(database.db);
    await sql`update webhook_deliveries set status = 'delivered', delivered_at = now() where id = ${delivered}`.execute(database.db);
    await sql`update webhook_deliveries set next_attempt_at = now() + interval '1 hour' where id = ${notDue}`.execute(database.db);
    await sql`update webhook_deliveries set lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 hour' where id = ${leased}`.execute(
      database.db,
    );
    await database.db.transaction().execute((trx) =>
      queueDeliveryJobs(
        trx,
        [delivered, notDue, leased, due].map((id) => ({ id: id! })),
      ),
    );

    running.worker = await startWebhookDelivery({
      connectionString: database.url,
      db: database.db,
      config: testConfig({ webhookAllowInsecure: true }),
    });
    await running.receiver.waitFor((received) => received.length === 1);
    await eventually(
      () =>
        sql<{ n: number }>`select count(*)::int as n from pgboss.job where name = ${deliveryQueue} and state = 'completed'`.execute(
          database.db,
        ),
      (result) => result.rows[0]!.n === 1,
    );
    expect(running.receiver.received.map((r) => r.deliveryId)).toEqual([due]);
    const attempts = await database.db.selectFrom('webhook_attempts').select('delivery_id').execute();
    expect(attempts.map((a) => a.delivery_id)).toEqual([due]);
  });

  it('takes the failures of one batch due in the same second, and starts when they are due', async () => {
    running.receiver = await startWebhookReceiver(() => ({ status: 503 }));
    const endpoint = await createEndpoint(database.db, {
      orgId,
      url: running.receiver.url,
      secret: generateWebhookSecret(),
      eventTypes: ['learner.enrolled'],
    });
    running.worker = await startWebhookDelivery({
      connectionString: database.url,
      db: database.db,
      config: testConfig({ webhookAllowInsecure: true, webhookRetryDelaysSeconds: [30, 30, 30, 30, 30] }),
    });
    await database.db.transaction().execute(async (trx) => {
      for (let n = 0; n < 5; n += 1) await recordEvent(trx, enrolled());
    });
    await running.receiver.waitFor((received) => received.length === 5);
    const deliveries = await deliveryIdsOf(endpoint.id);
    const [retry, ...others] = await eventually(
      () => waitingJobsOf(deliveries),
      (jobs) => jobs.length > 0,
    );
    expect(others).toEqual([]);
    expect(sorted(retry!.data.deliveryIds)).toEqual(sorted(deliveries));
    expect(retry!.starts_in).toBeGreaterThan(25);
    expect(retry!.starts_in).toBeLessThanOrEqual(30);
  });
});

describe('jobs queued again', () => {
  it('the sweep queues the overdue deliveries whose job was lost in one job, and no other while it waits', async () => {
    const endpoint = await newEndpoint();
    for (let n = 0; n < 3; n += 1) await recordEvent(database.db, enrolled());
    const deliveries = await deliveryIdsOf(endpoint.id);
    await sql`delete from pgboss.job where name = ${deliveryQueue}`.execute(database.db);
    await sql`update webhook_deliveries set next_attempt_at = now() - interval '1 minute' where id = any(${deliveries}::uuid[])`.execute(
      database.db,
    );

    expect(await requeueOverdueDeliveries(database.db, { graceSeconds: 10 })).toBe(3);
    await requeueOverdueDeliveries(database.db, { graceSeconds: 10 });
    const jobs = await waitingJobsOf(deliveries);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.singleton_key).toBe('overdue');
    expect(sorted(jobs[0]!.data.deliveryIds)).toEqual(sorted(deliveries));
  });

  it('enabling an endpoint queues its pending deliveries by due second: the overdue ones now, a retry when due', async () => {
    const endpoint = await newEndpoint();
    for (let n = 0; n < 3; n += 1) await recordEvent(database.db, enrolled());
    const [later, ...overdue] = await deliveryIdsOf(endpoint.id);
    await disableEndpoint(database.db, endpoint.id);
    await sql`delete from pgboss.job where name = ${deliveryQueue}`.execute(database.db);
    await sql`update webhook_deliveries set next_attempt_at = now() + interval '1 hour' where id = ${later}`.execute(database.db);

    expect(await enableEndpoint(database.db, endpoint.id)).toMatchObject({ resumed_deliveries: 3 });
    const jobs = await waitingJobsOf([later!, ...overdue]);
    expect(jobs.map((job) => sorted(job.data.deliveryIds))).toEqual([sorted(overdue), [later]]);
    expect(jobs[0]!.starts_in).toBeLessThanOrEqual(0);
    expect(jobs[1]!.starts_in).toBeGreaterThan(3590);
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
});
