import { randomUUID } from 'node:crypto';
import { CompiledQuery, type Expression, type RawBuilder, sql } from 'kysely';
import PgBoss from 'pg-boss';
import type { components, webhooks } from '../codegen/openapi';
import { advisoryLocks, type DB, withAdvisoryLock } from './connection';
import { parisRfc3339 } from './render';
import type { DeliveryStatus } from './tables/webhooks';

/*
 * Events and their webhook deliveries: all the SQL of the capability, in the order data flows.
 *   1. Record the event, in the transaction of the data change that causes it, and fan it out
 *      into one delivery per subscribed endpoint, its body built once.
 *   2. Queue the deliveries' jobs (pg-boss) in that same transaction, and wake the workers at commit.
 *   3. Claim the due deliveries: the worker (src/webhooks/worker.ts) takes their lease, signs and
 *      POSTs them (src/webhooks/signature.ts, src/webhooks/http-post.ts)...
 *   4. ...and records the attempts: delivered, retried on the schedule, or dead; endpoints that
 *      keep failing are disabled. Deliveries whose job was lost are queued again.
 * Then the operators' side (scripts/commands/webhook.ts): endpoints, the test ping, replay, the log.
 */

// ---------------------------------------------------------------------------------------------
// 1. Record the event

/** The event types of the contract (its `webhooks` section). */
export type EventType = keyof webhooks;

/** The `data` of an event of this type, as the contract's `webhooks` section defines it. */
export type EventData<T extends EventType> = NonNullable<webhooks[T]['post']['requestBody']>['content']['application/json']['data'];

/** The `learner` object every event's data carries. */
export type EventLearner = components['schemas']['WebhookLearner'];

/** The event types an endpoint can subscribe to; `ping` goes only to the endpoint being tested. */
export const subscribableEventTypes = [
  'quiz.completed',
  'course.started',
  'programme.completed',
  'learner.enrolled',
  'learner.activated',
  'satisfaction.submitted',
] as const satisfies readonly EventType[];

export interface RecordedEvent {
  id: string;
  created_at: Date;
  /** The webhook body of this event, byte for byte what every endpoint receives. */
  body: string;
}

/**
 * The body of every delivery of an event, built once, in SQL, in the statement that records the
 * event (its id and `created_at` come from the database): `{"id","type","created_at","data"}`, with
 * `data` exactly as the caller serialised it (its keys in the caller's order). The same bytes go to
 * every endpoint and on every attempt, so that a receiver's signature check always matches.
 */
function eventBodySql(event: {
  id: Expression<unknown> | RawBuilder<unknown>;
  type: Expression<unknown> | RawBuilder<unknown>;
  createdAt: Expression<unknown> | RawBuilder<unknown>;
  dataJson: Expression<unknown> | RawBuilder<unknown>;
}): RawBuilder<string> {
  return sql<string>`('{"id":' || to_json(${event.id}::text)::text || ',"type":' || to_json(${event.type}::text)::text
    || ',"created_at":' || to_json(${parisRfc3339(event.createdAt)})::text || ',"data":' || ${event.dataJson}::text || '}')`;
}

/** An event to record: its organisation, type and data (the contract's `webhooks` section). */
export interface NewEvent<T extends EventType = EventType> {
  orgId: string;
  type: T;
  data: EventData<T>;
}

/**
 * Records an event and queues one webhook delivery per enabled endpoint of the organisation that
 * subscribes to its type: `recordEvents` of one event.
 */
export async function recordEvent<T extends EventType>(trx: DB, event: NewEvent<T>): Promise<RecordedEvent> {
  return (await recordEvents(trx, [event]))[0]!;
}

/**
 * Records events (in their order) and queues one webhook delivery per enabled endpoint of an
 * event's organisation that subscribes to its type. Call it with the transaction of the data change
 * that causes the events, so that there is never an event (nor a delivery) without its data, nor a
 * committed change without its event. Given a plain connection, it opens a transaction of its own.
 *
 * One statement records the events, builds their bodies, fans them out to the endpoints (and asks,
 * for the commit, to wake a delivery worker up); a second queues the jobs of all their deliveries.
 * Events recorded together are delivered together: a caller with many events (a bulk enrolment)
 * records them in one call, and their deliveries make one job rather than one each.
 */
export async function recordEvents(trx: DB, events: readonly NewEvent[]): Promise<RecordedEvent[]> {
  if (events.length === 0) return [];
  if (!trx.isTransaction) return trx.transaction().execute((own) => recordEvents(own, events));
  const { rows } = await sql<RecordedEvent & { delivery_ids: string[] | null }>`
    with input as (
      select gen_random_uuid() as id, position, org_id, type, data_json
      from unnest(${events.map((event) => event.orgId)}::uuid[], ${events.map((event) => event.type)}::text[],
        ${events.map((event) => JSON.stringify(event.data))}::text[]) with ordinality as given(org_id, type, data_json, position)
    ), recorded as (
      insert into events (id, org_id, type, data) select id, org_id, type, data_json::jsonb from input
      returning id, created_at
    ), envelope as (
      select input.id, input.position, input.org_id, input.type, recorded.created_at,
        ${eventBodySql({ id: sql.ref('input.id'), type: sql.ref('input.type'), createdAt: sql.ref('recorded.created_at'), dataJson: sql.ref('input.data_json') })} as body
      from input join recorded on recorded.id = input.id
    ), deliveries as (
      insert into webhook_deliveries (event_id, endpoint_id, event_type, body)
      select envelope.id, endpoint.id, envelope.type, envelope.body
      from envelope join webhook_endpoints endpoint
        on endpoint.org_id = envelope.org_id and endpoint.enabled and envelope.type = any(endpoint.event_types)
      returning id, event_id
    ), fanned_out as (
      select event_id, array_agg(id) as ids from deliveries group by event_id
    )
    select envelope.id, envelope.created_at, envelope.body, fanned_out.ids as delivery_ids,
      (select count(pg_notify(${deliveryChannel}, '')) from (select from deliveries limit 1) as some_delivery) as woken
    from envelope left join fanned_out on fanned_out.event_id = envelope.id
    order by envelope.position`.execute(trx);
  await queueDeliveryJobs(
    trx,
    rows.flatMap((row) => (row.delivery_ids ?? []).map((id) => ({ id }))),
    { wake: false },
  );
  return rows.map(({ id, created_at, body }) => ({ id, created_at, body }));
}
// ---------------------------------------------------------------------------------------------
// 2. Queue the deliveries' jobs

/*
 * The pg-boss side of deliveries. A job carries the ids of deliveries created or planned together
 * (the events recorded together, the retries due in one second, a sweep) and says "look at
 * these deliveries at this time": each `webhook_deliveries` row says what to send and whether it is
 * still due, and its lease says who may send it. So a duplicate or late job is harmless, and a
 * missing one is recreated by the worker's sweep.
 */
export const deliveryQueue = 'webhook-delivery';
/** NOTIFY channel: a commit with deliveries due now wakes a worker of every server process. */
export const deliveryChannel = 'webhook_deliveries';
/** At most this many deliveries per job: a worker claims them chunk by chunk. */
const deliveriesPerJob = 1000;

export interface DeliveryJob {
  deliveryIds: string[];
}

/** pg-boss's `db` option over Kysely: its SQL runs on our connection or inside our transaction. */
export function kyselyExecutor(db: DB): PgBoss.Db {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const result = await db.executeQuery(CompiledQuery.raw(text, values));
      return { rows: result.rows as unknown[] };
    },
  };
}

/**
 * The queue: policy `short` allows one waiting job per singleton key. Each job gets a key of its
 * own (a job without one would share the empty key with all the others), except the sweep's: one
 * waiting at a time, however many processes sweep.
 */
const deliveryQueueOptions = {
  policy: 'short',
  retryLimit: 2,
  retryDelay: 5,
  expireInSeconds: 15 * 60,
  retentionMinutes: 14 * 24 * 60,
} as const satisfies Omit<PgBoss.Queue, 'name'>;

/**
 * Creates the delivery queue unless it exists, one process at a time. pg-boss's create_queue is not
 * safe against itself: two processes that create the queue at once, on a new database, can deadlock:
 * one's insert of the queue row waits for the other's transaction, which waits, to add its foreign
 * key, for the lock that the insert holds. That happened in 4 starts of 180 in a reproduction (two
 * pg-boss instances started together on a new database; none of 180 with the lock), and to the two
 * servers of enrolment.concurrency. The processes take turns under an advisory lock.
 */
export async function createDeliveryQueue(boss: PgBoss, db: DB): Promise<void> {
  await withAdvisoryLock(db, advisoryLocks.deliveryQueueCreation, () =>
    boss.createQueue(deliveryQueue, { name: deliveryQueue, ...deliveryQueueOptions }),
  );
}

/** Installs (or upgrades) pg-boss's schema and creates the queue; idempotent. */
export async function installDeliveryQueue(db: DB): Promise<void> {
  const boss = new PgBoss({ db: kyselyExecutor(db), supervise: false, schedule: false, migrate: true });
  await boss.start();
  try {
    await createDeliveryQueue(boss, db);
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

// Only its `insert` is used, always with the caller's transaction as `db`: it is never started.
let jobWriter: PgBoss | null = null;

/**
 * Queues jobs for these deliveries inside the caller's transaction (they exist if and only if the
 * transaction commits): one per due second, of at most `deliveriesPerJob`, starting when the last
 * of its deliveries is due. Those due now wake a worker up at commit, unless the caller has already
 * asked for that (`wake: false`). A `singletonKey` (the sweep's, for deliveries that make one job)
 * keeps the job out while one of that key waits.
 */
export async function queueDeliveryJobs(
  trx: DB,
  deliveries: { id: string; startAfterSeconds?: number }[],
  options: { wake?: boolean; singletonKey?: string } = {},
): Promise<void> {
  if (deliveries.length === 0) return;
  const byDueSecond = new Map<number, typeof deliveries>();
  for (const delivery of deliveries) {
    const second = Math.ceil(delivery.startAfterSeconds ?? 0);
    const group = byDueSecond.get(second);
    if (group) group.push(delivery);
    else byDueSecond.set(second, [delivery]);
  }
  const jobs = [...byDueSecond.values()].flatMap((due) =>
    Array.from({ length: Math.ceil(due.length / deliveriesPerJob) }, (_, index) => {
      const chunk = due.slice(index * deliveriesPerJob, (index + 1) * deliveriesPerJob);
      const startAfterSeconds = Math.max(...chunk.map((delivery) => delivery.startAfterSeconds ?? 0));
      const id = randomUUID();
      return {
        id,
        name: deliveryQueue,
        data: { deliveryIds: chunk.map((delivery) => delivery.id) } satisfies DeliveryJob,
        singletonKey: options.singletonKey ?? id,
        ...(startAfterSeconds > 0 ? { startAfter: String(startAfterSeconds) } : {}),
      };
    }),
  );
  jobWriter ??= new PgBoss({ db: { executeSql: () => Promise.reject(new Error('unused')) }, supervise: false, schedule: false });
  await jobWriter.insert(jobs, { db: kyselyExecutor(trx) });
  if (options.wake !== false && deliveries.some((delivery) => !delivery.startAfterSeconds))
    await sql`select pg_notify(${deliveryChannel}, '')`.execute(trx);
}
// ---------------------------------------------------------------------------------------------
// 3. Claim the due deliveries

/** A delivery the worker holds the lease of: everything needed to send it. */
export interface ClaimedDelivery {
  id: string;
  endpoint_id: string;
  event_type: EventType;
  body: string;
  url: string;
  /** The current secret, then the previous one while it is still valid. */
  secrets: string[];
  lease_token: string;
}

/**
 * Takes the lease of those deliveries that are due, pending, on an enabled endpoint and not leased
 * by anyone else. The conditional update is atomic: of two processes claiming one delivery, one
 * gets it, the other gets nothing. The lease outlasts one attempt (timeout included), so that a
 * holder that crashed is replaced only after its attempt can no longer be in flight.
 */
export async function claimDeliveries(db: DB, ids: readonly string[], leaseSeconds: number): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const leaseToken = randomUUID();
  const result = await sql<ClaimedDelivery>`
    update webhook_deliveries d
    set lease_token = ${leaseToken}, lease_expires_at = now() + make_interval(secs => ${leaseSeconds})
    from webhook_endpoints e
    where d.id = any(${[...ids]}::uuid[]) and e.id = d.endpoint_id
      and d.status = 'pending' and e.enabled and d.next_attempt_at <= now()
      and (d.lease_expires_at is null or d.lease_expires_at <= now())
    returning d.id, d.endpoint_id, d.event_type, d.body, e.url, d.lease_token,
      array_remove(array[e.secret, case when e.previous_secret_expires_at > now() then e.previous_secret end], null) as secrets`.execute(
    db,
  );
  return result.rows;
}

// ---------------------------------------------------------------------------------------------
// 4. Record the attempts

/** What one attempt produced (src/webhooks/http-post.ts): the row of the attempts log. */
export interface AttemptOutcome {
  attemptedAt: Date;
  durationMs: number;
  /** null: no HTTP answer (timeout, refused address, connection error). */
  statusCode: number | null;
  succeeded: boolean;
  error: string | null;
  responseExcerpt: string | null;
}

/**
 * Writes the outcome of attempts: each attempt is logged; a success marks its delivery delivered
 * and resets the endpoint's failure count; a failure plans the next attempt (or `dead` after the
 * last one), counts towards disabling the endpoint and queues the job of the next attempt. Only
 * the holder of the lease changes a delivery (one that lost its lease still logs its attempt).
 * Without failures, one statement does it all.
 */
export async function recordAttempts(
  db: DB,
  attempts: { delivery: ClaimedDelivery; outcome: AttemptOutcome }[],
  policy: { retryDelaysSeconds: readonly number[]; disableAfter: number },
): Promise<RecordedAttempts> {
  const succeeded = attempts.filter((a) => a.outcome.succeeded).map((a) => a.delivery);
  const failed = attempts.filter((a) => !a.outcome.succeeded).map((a) => a.delivery);
  if (failed.length === 0) {
    if (attempts.length > 0) await logAttemptsAndSuccesses(db, attempts, succeeded);
    return { succeeded: succeeded.length, failed: 0, dead: 0 };
  }
  const dead = await db.transaction().execute(async (trx) => {
    await logAttemptsAndSuccesses(trx, attempts, succeeded);
    return planRetries(trx, failed, policy);
  });
  return { succeeded: succeeded.length, failed: failed.length - dead, dead };
}

/** The attempts of a batch by outcome: succeeded, failed with a retry planned, failed as the delivery's last (dead). */
export interface RecordedAttempts {
  succeeded: number;
  failed: number;
  dead: number;
}

/**
 * Logs the attempts; marks the successes' deliveries delivered and resets their endpoints' failure
 * counts. The endpoints are written only when there is something to reset: a busy endpoint's row
 * is not rewritten (nor locked) by every success.
 */
async function logAttemptsAndSuccesses(
  db: DB,
  attempts: { delivery: ClaimedDelivery; outcome: AttemptOutcome }[],
  succeeded: ClaimedDelivery[],
): Promise<void> {
  const outcomes = attempts.map((a) => a.outcome);
  await sql`
    with delivered as (
      update webhook_deliveries d
      set status = 'delivered', attempt_count = attempt_count + 1, delivered_at = now(), lease_token = null, lease_expires_at = null
      from unnest(${succeeded.map((d) => d.id)}::uuid[], ${succeeded.map((d) => d.lease_token)}::uuid[]) as s(id, token)
      where d.id = s.id and d.lease_token = s.token
    ), reset as (
      update webhook_endpoints set consecutive_failures = 0
      where id = any(${[...new Set(succeeded.map((d) => d.endpoint_id))]}::uuid[]) and consecutive_failures <> 0
    )
    insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code, succeeded, error, response_excerpt)
    select * from unnest(${attempts.map((a) => a.delivery.id)}::uuid[], ${outcomes.map((o) => o.attemptedAt)}::timestamptz[],
      ${outcomes.map((o) => o.durationMs)}::int[], ${outcomes.map((o) => o.statusCode)}::int[], ${outcomes.map((o) => o.succeeded)}::boolean[],
      ${outcomes.map((o) => o.error)}::text[], ${outcomes.map((o) => o.responseExcerpt)}::text[])`.execute(db);
}

/**
 * Failures: the next attempt planned (or the delivery `dead` after the last one), the endpoints'
 * failure counts raised (disabling those that reach the limit), and the retries' jobs queued.
 * Returns how many deliveries this made dead.
 */
async function planRetries(
  trx: DB,
  deliveries: ClaimedDelivery[],
  policy: { retryDelaysSeconds: readonly number[]; disableAfter: number },
): Promise<number> {
  const maxAttempts = policy.retryDelaysSeconds.length + 1;
  const retries = await sql<{ id: string; startAfterSeconds: number }>`
    update webhook_deliveries d
    set attempt_count = attempt_count + 1,
      status = case when attempt_count + 1 >= ${maxAttempts} then 'dead' else 'pending' end,
      dead_at = case when attempt_count + 1 >= ${maxAttempts} then now() end,
      next_attempt_at = case when attempt_count + 1 >= ${maxAttempts} then next_attempt_at
        else now() + make_interval(secs => (${[...policy.retryDelaysSeconds]}::float8[])[attempt_count + 1]) end,
      lease_token = null, lease_expires_at = null
    from unnest(${deliveries.map((d) => d.id)}::uuid[], ${deliveries.map((d) => d.lease_token)}::uuid[]) as f(id, token)
    where d.id = f.id and d.lease_token = f.token
    returning d.id, case when d.status = 'pending' then extract(epoch from d.next_attempt_at - now())::float8 end as "startAfterSeconds"`.execute(
    trx,
  );
  const failuresByEndpoint = new Map<string, number>();
  for (const d of deliveries) failuresByEndpoint.set(d.endpoint_id, (failuresByEndpoint.get(d.endpoint_id) ?? 0) + 1);
  for (const [endpointId, failures] of failuresByEndpoint) {
    await sql`
      update webhook_endpoints
      set consecutive_failures = consecutive_failures + ${failures},
        enabled = enabled and consecutive_failures + ${failures} < ${policy.disableAfter},
        disabled_at = case when enabled and consecutive_failures + ${failures} >= ${policy.disableAfter} then now() else disabled_at end,
        disabled_reason = case when enabled and consecutive_failures + ${failures} >= ${policy.disableAfter} then 'failures' else disabled_reason end
      where id = ${endpointId}`.execute(trx);
  }
  const planned = retries.rows.filter((r) => r.startAfterSeconds !== null);
  await queueDeliveryJobs(trx, planned);
  return retries.rows.length - planned.length;
}

/**
 * Pending deliveries overdue by more than `graceSeconds` that nobody holds: their job was lost (a
 * server killed mid-attempt, a wake-up consumed while the endpoint was disabled). The oldest ones
 * queued again in one job, under the sweep's key: while one such job waits, another sweep (of this
 * process or of another one) adds none. Returns how many overdue deliveries were found.
 */
export async function requeueOverdueDeliveries(db: DB, options: { graceSeconds: number }): Promise<number> {
  const overdue = await sql<{ id: string }>`
    select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
    where d.status = 'pending' and e.enabled
      and d.next_attempt_at < now() - make_interval(secs => ${options.graceSeconds})
      and (d.lease_expires_at is null or d.lease_expires_at < now())
    order by d.next_attempt_at
    limit ${deliveriesPerJob}`.execute(db);
  if (overdue.rows.length === 0) return 0;
  await db.transaction().execute((trx) => queueDeliveryJobs(trx, overdue.rows, { singletonKey: 'overdue' }));
  return overdue.rows.length;
}

// ---------------------------------------------------------------------------------------------
// The operators' side: endpoints, the test ping, replay, the delivery log

/** How long the previous secret keeps signing after a rotation. */
export const previousSecretValiditySeconds = 24 * 60 * 60;

const endpointListing = [
  'id',
  'org_id',
  'url',
  'event_types',
  'enabled',
  'consecutive_failures',
  'disabled_at',
  'disabled_reason',
  'previous_secret_expires_at',
  'created_at',
] as const;

export async function createEndpoint(db: DB, endpoint: { orgId: string; url: string; secret: string; eventTypes: readonly string[] }) {
  return db
    .insertInto('webhook_endpoints')
    .values({ org_id: endpoint.orgId, url: endpoint.url, secret: endpoint.secret, event_types: [...endpoint.eventTypes] })
    .returning(endpointListing)
    .executeTakeFirstOrThrow();
}

/** Endpoints of an organisation, without their secrets. */
export async function listEndpoints(db: DB, orgId: string) {
  return db
    .selectFrom('webhook_endpoints')
    .select(endpointListing)
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function findEndpoint(db: DB, id: string) {
  return (await db.selectFrom('webhook_endpoints').select(endpointListing).where('id', '=', id).executeTakeFirst()) ?? null;
}

/** The operator disables an endpoint: nothing is attempted, pending deliveries are kept. */
export async function disableEndpoint(db: DB, id: string) {
  return (
    (await db
      .updateTable('webhook_endpoints')
      .set({ enabled: false, disabled_at: sql`coalesce(disabled_at, now())`, disabled_reason: sql`coalesce(disabled_reason, 'operator')` })
      .where('id', '=', id)
      .returning(endpointListing)
      .executeTakeFirst()) ?? null
  );
}

/**
 * (Re-)enables an endpoint with a fresh failure count, and wakes its pending deliveries up: each at
 * its own due time (a retry planned in 6 h stays in 6 h), overdue ones at once.
 */
export async function enableEndpoint(db: DB, id: string) {
  return db.transaction().execute(async (trx) => {
    const endpoint = await trx
      .updateTable('webhook_endpoints')
      .set({ enabled: true, consecutive_failures: 0, disabled_at: null, disabled_reason: null })
      .where('id', '=', id)
      .returning(endpointListing)
      .executeTakeFirst();
    if (!endpoint) return null;
    const pending = await trx
      .selectFrom('webhook_deliveries')
      .select(['id', sql<number>`greatest(0, extract(epoch from next_attempt_at - now()))::float8`.as('startAfterSeconds')])
      .where('endpoint_id', '=', id)
      .where('status', '=', 'pending')
      .execute();
    await queueDeliveryJobs(trx, pending);
    return { ...endpoint, resumed_deliveries: pending.length };
  });
}

/** A new current secret; the old one keeps signing for 24 hours. */
export async function rotateEndpointSecret(db: DB, id: string, newSecret: string) {
  return (
    (await db
      .updateTable('webhook_endpoints')
      .set({
        previous_secret: sql`secret`,
        previous_secret_expires_at: sql`now() + make_interval(secs => ${previousSecretValiditySeconds})`,
        secret: newSecret,
      })
      .where('id', '=', id)
      .returning(endpointListing)
      .executeTakeFirst()) ?? null
  );
}

/** The test button: a signed `ping` event for this endpoint only, queued like any delivery. */
export async function queuePing(db: DB, endpointId: string) {
  return db.transaction().execute(async (trx) => {
    const endpoint = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'org_id', 'enabled'])
      .where('id', '=', endpointId)
      .executeTakeFirst();
    if (!endpoint) return null;
    const event = await recordEvent(trx, {
      orgId: endpoint.org_id,
      type: 'ping',
      data: { learner: null, endpoint_id: endpoint.id, message: 'Ceci est un événement de test.' },
    });
    const delivery = await trx
      .insertInto('webhook_deliveries')
      .values({ event_id: event.id, endpoint_id: endpoint.id, event_type: 'ping', body: event.body })
      .returning('id')
      .executeTakeFirstOrThrow();
    await queueDeliveryJobs(trx, [delivery]);
    return { eventId: event.id, deliveryId: delivery.id, endpointEnabled: endpoint.enabled };
  });
}

/** A dead or delivered delivery sent again: same id, same body, a new cycle of attempts. */
export async function replayDelivery(db: DB, deliveryId: string) {
  return db.transaction().execute(async (trx) => {
    const current = await trx
      .selectFrom('webhook_deliveries')
      .select(['id', 'status'])
      .where('id', '=', deliveryId)
      .forUpdate()
      .executeTakeFirst();
    if (!current) return null;
    if (current.status === 'pending') return { id: current.id, replayed: false as const, status: current.status };
    await trx
      .updateTable('webhook_deliveries')
      .set({
        status: 'pending',
        attempt_count: 0,
        next_attempt_at: sql`now()`,
        delivered_at: null,
        dead_at: null,
        replay_count: sql`replay_count + 1`,
      })
      .where('id', '=', deliveryId)
      .execute();
    await queueDeliveryJobs(trx, [{ id: deliveryId }]);
    return { id: current.id, replayed: true as const, status: 'pending' as DeliveryStatus };
  });
}

export async function findDelivery(db: DB, deliveryId: string) {
  return (
    (await db.selectFrom('webhook_deliveries').select(['id', 'endpoint_id', 'status']).where('id', '=', deliveryId).executeTakeFirst()) ??
    null
  );
}

/** The delivery log of an endpoint, newest first, each delivery with its attempts in order. */
export async function listDeliveries(db: DB, endpointId: string, options: { status?: DeliveryStatus; limit: number }) {
  let query = db
    .selectFrom('webhook_deliveries as d')
    .select([
      'd.id',
      'd.event_id',
      'd.event_type',
      'd.status',
      'd.attempt_count',
      'd.next_attempt_at',
      'd.created_at',
      'd.delivered_at',
      'd.dead_at',
      'd.replay_count',
    ])
    .where('d.endpoint_id', '=', endpointId);
  if (options.status) query = query.where('d.status', '=', options.status);
  const deliveries = await query.orderBy('d.created_at', 'desc').orderBy('d.id').limit(options.limit).execute();
  const attempts =
    deliveries.length === 0
      ? []
      : await db
          .selectFrom('webhook_attempts')
          .select(['delivery_id', 'attempted_at', 'status_code', 'duration_ms', 'succeeded', 'error', 'response_excerpt'])
          .where(
            'delivery_id',
            'in',
            deliveries.map((d) => d.id),
          )
          .orderBy('attempted_at')
          .orderBy('id')
          .execute();
  return deliveries.map((delivery) => ({
    ...delivery,
    attempts: attempts.filter((a) => a.delivery_id === delivery.id).map(({ delivery_id: _unused, ...attempt }) => attempt),
  }));
}
