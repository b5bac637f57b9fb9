import { randomUUID } from 'node:crypto';
import { CompiledQuery, type Expression, type RawBuilder, sql } from 'kysely';
import PgBoss from 'pg-boss';
import type { components, webhooks } from '../codegen/openapi';
import type { DB } from './connection';
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
  dataJson: string;
}): RawBuilder<string> {
  return sql<string>`('{"id":' || to_json(${event.id}::text)::text || ',"type":' || to_json(${event.type}::text)::text
    || ',"created_at":' || to_json(${parisRfc3339(event.createdAt)})::text || ',"data":' || ${event.dataJson}::text || '}')`;
}
/**
 * Records an event and queues one webhook delivery per enabled endpoint of the organisation that
 * subscribes to its type. Call it with the transaction of the data change that causes the event, so
 * that there is never an event (nor a delivery) without its data, nor a committed change without its
 * event. Given a plain connection, it opens a transaction of its own for the event and its deliveries.
 *
 * One statement records the event, builds its body and fans it out to the endpoints (and asks, for
 * the commit, to wake the delivery workers up); a second queues the deliveries' jobs, if any.
 */
export async function recordEvent<T extends EventType>(
  trx: DB,
  event: { orgId: string; type: T; data: EventData<T> },
): Promise<RecordedEvent> {
  if (!trx.isTransaction) return trx.transaction().execute((own) => recordEvent<T>(own, event));
  const dataJson = JSON.stringify(event.data);
  const {
    rows: [recorded],
  } = await sql<RecordedEvent & { delivery_ids: string[] }>`
    with recorded as (
      insert into events (org_id, type, data) values (${event.orgId}, ${event.type}, ${dataJson}::jsonb)
      returning id, type, created_at
    ), envelope as (
      select id, created_at, ${eventBodySql({ id: sql.ref('id'), type: sql.ref('type'), createdAt: sql.ref('created_at'), dataJson })} as body
      from recorded
    ), deliveries as (
      insert into webhook_deliveries (event_id, endpoint_id, body)
      select envelope.id, endpoint.id, envelope.body
      from envelope join webhook_endpoints endpoint
        on endpoint.org_id = ${event.orgId} and endpoint.enabled and ${event.type} = any(endpoint.event_types)
      returning id
    )
    select envelope.id, envelope.created_at, envelope.body, array(select id from deliveries) as delivery_ids,
      (select count(pg_notify(${deliveryChannel}, '')) from (select from deliveries limit 1) as some_delivery) as woken
    from envelope`.execute(trx);
  const { delivery_ids: deliveryIds, ...result } = recorded!;
  await queueDeliveryJobs(
    trx,
    deliveryIds.map((id) => ({ id })),
    { wake: false },
  );
  return result;
}
// ---------------------------------------------------------------------------------------------
// 2. Queue the deliveries' jobs

/*
 * The pg-boss side of deliveries. A job carries only a delivery id and says "look at this delivery
 * at this time": the `webhook_deliveries` row says what to send and whether it is still due, and
 * its lease says who may send it. So a duplicate or late job is harmless, and a missing one is
 * recreated by the worker's sweep.
 */
export const deliveryQueue = 'webhook-delivery';
/** NOTIFY channel: committed deliveries wake the workers of every server process at once. */
export const deliveryChannel = 'webhook_deliveries';

export interface DeliveryJob {
  deliveryId: string;
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
 * The queue: policy `short` allows one waiting job per delivery (the singleton key), so every
 * writer can ask for a delivery to be looked at without piling up duplicates.
 */
export const deliveryQueueOptions = {
  policy: 'short',
  retryLimit: 2,
  retryDelay: 5,
  expireInSeconds: 15 * 60,
  retentionMinutes: 14 * 24 * 60,
} as const satisfies Omit<PgBoss.Queue, 'name'>;

/** Installs (or upgrades) pg-boss's schema and creates the queue; idempotent. */
export async function installDeliveryQueue(db: DB): Promise<void> {
  const boss = new PgBoss({ db: kyselyExecutor(db), supervise: false, schedule: false, migrate: true });
  await boss.start();
  try {
    await boss.createQueue(deliveryQueue, { name: deliveryQueue, ...deliveryQueueOptions });
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

// Only its `insert` is used, always with the caller's transaction as `db`: it is never started.
let jobWriter: PgBoss | null = null;

/**
 * Queues the jobs of these deliveries inside the caller's transaction (they exist if and only if
 * the transaction commits); those due now wake the workers up at commit, unless the caller has
 * already asked for that (`wake: false`).
 */
export async function queueDeliveryJobs(
  trx: DB,
  deliveries: { id: string; startAfterSeconds?: number }[],
  options: { wake?: boolean } = {},
): Promise<void> {
  if (deliveries.length === 0) return;
  jobWriter ??= new PgBoss({ db: { executeSql: () => Promise.reject(new Error('unused')) }, supervise: false, schedule: false });
  await jobWriter.insert(
    deliveries.map((delivery) => ({
      name: deliveryQueue,
      data: { deliveryId: delivery.id } satisfies DeliveryJob,
      singletonKey: delivery.id,
      ...(delivery.startAfterSeconds ? { startAfter: String(delivery.startAfterSeconds) } : {}),
    })),
    { db: kyselyExecutor(trx) },
  );
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
    from webhook_endpoints e, events ev
    where d.id = any(${[...ids]}::uuid[]) and e.id = d.endpoint_id and ev.id = d.event_id
      and d.status = 'pending' and e.enabled and d.next_attempt_at <= now()
      and (d.lease_expires_at is null or d.lease_expires_at <= now())
    returning d.id, d.endpoint_id, ev.type as event_type, d.body, e.url, d.lease_token,
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

function attemptRow(deliveryId: string, outcome: AttemptOutcome) {
  return {
    delivery_id: deliveryId,
    attempted_at: outcome.attemptedAt,
    duration_ms: outcome.durationMs,
    status_code: outcome.statusCode,
    succeeded: outcome.succeeded,
    error: outcome.error,
    response_excerpt: outcome.responseExcerpt,
  };
}

/**
 * Writes the outcome of attempts: each attempt is logged; a success marks its delivery delivered
 * and resets the endpoint's failure count; a failure plans the next attempt (or `dead` after the
 * last one), counts towards disabling the endpoint and queues the job of the next attempt. Only
 * the holder of the lease changes a delivery (one that lost its lease still logs its attempt).
 */
export async function recordAttempts(
  db: DB,
  attempts: { delivery: ClaimedDelivery; outcome: AttemptOutcome }[],
  policy: { retryDelaysSeconds: readonly number[]; disableAfter: number },
): Promise<RecordedAttempts> {
  const succeeded = attempts.filter((a) => a.outcome.succeeded).map((a) => a.delivery);
  const failed = attempts.filter((a) => !a.outcome.succeeded).map((a) => a.delivery);
  if (attempts.length === 0) return { succeeded: 0, failed: 0, dead: 0 };
  const dead = await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('webhook_attempts')
      .values(attempts.map((a) => attemptRow(a.delivery.id, a.outcome)))
      .execute();
    if (succeeded.length > 0) await markDelivered(trx, succeeded);
    return failed.length > 0 ? planRetries(trx, failed, policy) : 0;
  });
  return { succeeded: succeeded.length, failed: failed.length - dead, dead };
}

/** The attempts of a batch by outcome: succeeded, failed with a retry planned, failed as the delivery's last (dead). */
export interface RecordedAttempts {
  succeeded: number;
  failed: number;
  dead: number;
}

/** Successes: their deliveries delivered, and their endpoints' failure counts reset. */
async function markDelivered(trx: DB, deliveries: ClaimedDelivery[]): Promise<void> {
  await sql`
    update webhook_deliveries d
    set status = 'delivered', attempt_count = attempt_count + 1, delivered_at = now(), lease_token = null, lease_expires_at = null
    from unnest(${deliveries.map((d) => d.id)}::uuid[], ${deliveries.map((d) => d.lease_token)}::uuid[]) as s(id, token)
    where d.id = s.id and d.lease_token = s.token`.execute(trx);
  // Written only when there is something to reset: a busy endpoint's row is not rewritten
  // (nor locked) by every success.
  await trx
    .updateTable('webhook_endpoints')
    .set({ consecutive_failures: 0 })
    .where('id', 'in', [...new Set(deliveries.map((d) => d.endpoint_id))])
    .where('consecutive_failures', '<>', 0)
    .execute();
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
 * server killed mid-attempt, a wake-up consumed while the endpoint was disabled). Queued again; the
 * queue keeps at most one waiting job per delivery, so sweeping is idempotent.
 */
export async function requeueOverdueDeliveries(db: DB, options: { graceSeconds: number; limit: number }): Promise<number> {
  const overdue = await sql<{ id: string }>`
    select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
    where d.status = 'pending' and e.enabled
      and d.next_attempt_at < now() - make_interval(secs => ${options.graceSeconds})
      and (d.lease_expires_at is null or d.lease_expires_at < now())
    order by d.next_attempt_at
    limit ${options.limit}`.execute(db);
  if (overdue.rows.length > 0) await db.transaction().execute((trx) => queueDeliveryJobs(trx, overdue.rows));
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
    for (let start = 0; start < pending.length; start += 1000) await queueDeliveryJobs(trx, pending.slice(start, start + 1000));
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
      .values({ event_id: event.id, endpoint_id: endpoint.id, body: event.body })
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
    .innerJoin('events as ev', 'ev.id', 'd.event_id')
    .select([
      'd.id',
      'd.event_id',
      'ev.type as event_type',
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
