import { CompiledQuery, type Expression, type RawBuilder, sql } from 'kysely';
import PgBoss from 'pg-boss';
import type { components, webhooks } from '../codegen/openapi';
import { advisoryLocks, type DB, withAdvisoryLock } from './connection';
import { parisRfc3339 } from './render';
import type { WebhookFailureCode } from './tables/webhooks';

/*
 * Events and their webhook deliveries: all the SQL of the capability, in the order data flows.
 *   1. Record the event, in the transaction of the data change that causes it, and fan it out
 *      into one delivery per subscribed endpoint, its body built once.
 *   2. Queue each delivery's attempt as a pg-boss job in that same transaction, and wake the
 *      workers at commit. A pending delivery names the job of its next attempt: no other job may
 *      attempt it.
 *   3. Take the deliveries that a batch of jobs may attempt: the worker (src/webhooks/worker.ts)
 *      signs and POSTs them (src/webhooks/signature.ts, src/webhooks/http-post.ts)...
 *   4. ...and records the attempts: delivered; or failed, its retry queued as a job that starts
 *      after the schedule's delay, or dead after the last one; endpoints that keep failing are
 *      disabled.
 * The endpoints, the deliveries sent to one endpoint (test, example), replays and the delivery log,
 * as the management API and the operator's commands change and read them, are in
 * db/webhook-endpoints.ts.
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
 * One statement records the events, builds their bodies, fans them out to the endpoints (each
 * delivery naming the job of its first attempt) and asks, for the commit, to wake a delivery
 * worker up; a second queues those jobs.
 */
export async function recordEvents(trx: DB, events: readonly NewEvent[]): Promise<RecordedEvent[]> {
  if (events.length === 0) return [];
  if (!trx.isTransaction) return trx.transaction().execute((own) => recordEvents(own, events));
  const { rows } = await sql<RecordedEvent & { delivery_ids: string[] | null; job_ids: string[] | null }>`
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
      insert into webhook_deliveries (event_id, endpoint_id, event_type, body, job_id)
      select envelope.id, endpoint.id, envelope.type, envelope.body, gen_random_uuid()
      from envelope join webhook_endpoints endpoint
        on endpoint.org_id = envelope.org_id and endpoint.enabled and envelope.type = any(endpoint.event_types)
      returning id, event_id, job_id
    ), fanned_out as (
      select event_id, array_agg(id) as delivery_ids, array_agg(job_id) as job_ids from deliveries group by event_id
    )
    select envelope.id, envelope.created_at, envelope.body, fanned_out.delivery_ids, fanned_out.job_ids,
      (select count(pg_notify(${deliveryChannel}, '')) from (select from deliveries limit 1) as some_delivery) as woken
    from envelope left join fanned_out on fanned_out.event_id = envelope.id
    order by envelope.position`.execute(trx);
  await queueAttempts(
    trx,
    rows.flatMap((row) => (row.delivery_ids ?? []).map((deliveryId, i) => ({ deliveryId, jobId: row.job_ids![i]! }))),
    { wake: false },
  );
  return rows.map(({ id, created_at, body }) => ({ id, created_at, body }));
}
/**
 * Records an event meant for one endpoint only (the test ping, an example of a type) and queues
 * its delivery there, whatever the endpoint subscribes to: no other endpoint receives it. It is a
 * sample: the organisation's event counts leave it out.
 */
export async function recordEventForEndpoint<T extends EventType>(
  trx: DB,
  event: NewEvent<T>,
  endpointId: string,
): Promise<{ eventId: string; deliveryId: string }> {
  const dataJson = JSON.stringify(event.data);
  const { rows } = await sql<{ eventId: string; deliveryId: string; jobId: string }>`
    with recorded as (
      insert into events (org_id, type, data, sample) values (${event.orgId}, ${event.type}, ${dataJson}::jsonb, true)
      returning id, created_at
    )
    insert into webhook_deliveries (event_id, endpoint_id, event_type, body, job_id)
    select recorded.id, ${endpointId}, ${event.type},
      ${eventBodySql({ id: sql.ref('recorded.id'), type: sql`${event.type}`, createdAt: sql.ref('recorded.created_at'), dataJson: sql`${dataJson}` })},
      gen_random_uuid()
    from recorded
    returning event_id as "eventId", id as "deliveryId", job_id as "jobId"`.execute(trx);
  const recorded = rows[0]!;
  await queueAttempts(trx, [{ deliveryId: recorded.deliveryId, jobId: recorded.jobId }]);
  return { eventId: recorded.eventId, deliveryId: recorded.deliveryId };
}

// ---------------------------------------------------------------------------------------------
// 2. Queue the attempts' jobs

/*
 * The pg-boss side of deliveries. A job is one attempt of one delivery, and a pending delivery
 * names the job of its next attempt (`job_id`): a job that the delivery does not name (a late
 * duplicate, a job of a delivery replayed since) attempts nothing. A job's own retries, by which
 * pg-boss offers it again when its worker died or failed to record it, keep its id, and so its
 * right to attempt the delivery. pg-boss runs one job in one place at a time (and offers an active
 * one again only once it expired, after its attempt can no longer be in flight), so a delivery is
 * attempted by one process at a time.
 */
export const deliveryQueue = 'webhook-delivery';
/** NOTIFY channel: a commit with deliveries due now wakes a worker of every server process. */
export const deliveryChannel = 'webhook_deliveries';

/** The data of a job: the delivery it attempts. */
export interface AttemptJob {
  deliveryId: string;
}

/** A job to queue: the delivery, the id it names its job by, and when the attempt starts (at once without). */
export interface QueuedAttempt {
  deliveryId: string;
  jobId: string;
  startAfter?: Date;
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
 * The queue's options. Its retries are pg-boss's own, for a job whose worker died or could not
 * record its attempt (the database lost): the attempts' schedule is made of jobs, not of these.
 */
const deliveryQueueOptions = {
  policy: 'standard',
  retryLimit: 20,
  retryDelay: 5,
  retryBackoff: false,
  retentionMinutes: 14 * 24 * 60,
} as const satisfies Omit<PgBoss.Queue, 'name'>;

/** A queue created by a command, before any worker brought it to its own expiry. */
const defaultExpireInSeconds = 60;

/**
 * Creates the delivery queue unless it exists, and, given `expireInSeconds` (a starting worker
 * gives how long one of its attempts may last), sets its options. One process at a time, under an
 * advisory lock: pg-boss's create_queue is not safe against itself, two processes creating the
 * queue at once on a new database can deadlock (one's insert of the queue row waits for the
 * other's transaction, which waits, to add its foreign key, for the lock that the insert holds).
 */
export async function createDeliveryQueue(boss: PgBoss, db: DB, expireInSeconds?: number): Promise<void> {
  await withAdvisoryLock(db, advisoryLocks.deliveryQueueCreation, async () => {
    const options = { name: deliveryQueue, ...deliveryQueueOptions, expireInSeconds: expireInSeconds ?? defaultExpireInSeconds };
    if (!(await boss.getQueue(deliveryQueue))) await boss.createQueue(deliveryQueue, options);
    else if (expireInSeconds !== undefined) await boss.updateQueue(deliveryQueue, options);
    await queueDeliveriesWithoutJob(db);
  });
}

/**
 * Pending deliveries of enabled endpoints that name no job, recorded before deliveries named their
 * jobs, get theirs, each starting when it was due. Nothing else leaves such a delivery: one set
 * aside names no job only while its endpoint is disabled.
 */
async function queueDeliveriesWithoutJob(db: DB): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const { rows } = await sql<QueuedAttempt & { startAfter: Date }>`
      update webhook_deliveries d set job_id = gen_random_uuid()
      from webhook_endpoints e
      where e.id = d.endpoint_id and e.enabled and d.status = 'pending' and d.job_id is null
      returning d.id as "deliveryId", d.job_id as "jobId", d.next_attempt_at as "startAfter"`.execute(trx);
    await queueAttempts(trx, rows);
  });
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
 * Queues the jobs of these attempts inside the caller's transaction (they exist if and only if the
 * transaction commits), each under the id its delivery names. Those due now wake a worker up at
 * commit, unless the caller has already asked for that (`wake: false`).
 */
export async function queueAttempts(trx: DB, attempts: readonly QueuedAttempt[], options: { wake?: boolean } = {}): Promise<void> {
  if (attempts.length === 0) return;
  jobWriter ??= new PgBoss({ db: { executeSql: () => Promise.reject(new Error('unused')) }, supervise: false, schedule: false });
  await jobWriter.insert(
    attempts.map((attempt) => ({
      id: attempt.jobId,
      name: deliveryQueue,
      data: { deliveryId: attempt.deliveryId } satisfies AttemptJob,
      ...(attempt.startAfter ? { startAfter: attempt.startAfter } : {}),
    })),
    { db: kyselyExecutor(trx) },
  );
  const now = Date.now();
  if (options.wake !== false && attempts.some((attempt) => !attempt.startAfter || attempt.startAfter.getTime() <= now))
    await sql`select pg_notify(${deliveryChannel}, '')`.execute(trx);
}
/**
 * The jobs of recorded attempts end in the transaction that records them: deleted, since the
 * delivery rows are the record (pg-boss's completion of the batch then finds nothing to do).
 */
async function endJobs(trx: DB, jobIds: readonly string[]): Promise<void> {
  jobWriter ??= new PgBoss({ db: { executeSql: () => Promise.reject(new Error('unused')) }, supervise: false, schedule: false });
  await jobWriter.deleteJob(deliveryQueue, [...jobIds], { db: kyselyExecutor(trx) });
}
// ---------------------------------------------------------------------------------------------
// 3. Take the deliveries the jobs may attempt

/** A delivery a job may attempt now: everything needed to send it, and the job. */
export interface DueDelivery {
  id: string;
  job_id: string;
  endpoint_id: string;
  event_type: EventType;
  body: string;
  url: string;
  /** The current secret, then the previous one while it is still valid. */
  secrets: string[];
}

/**
 * The deliveries these jobs may attempt: pending, naming the job, on an enabled endpoint. The
 * others attempt nothing: delivered, dead or naming another job, they are left as they are; on a
 * disabled endpoint, they are set aside.
 */
export async function takeDueDeliveries(db: DB, jobs: readonly { id: string; data: AttemptJob }[]): Promise<DueDelivery[]> {
  if (jobs.length === 0) return [];
  const { rows } = await sql<DueDelivery & { enabled: boolean }>`
    select d.id, d.job_id, d.endpoint_id, d.event_type, d.body, e.url, e.enabled,
      array_remove(array[e.secret, case when e.previous_secret_expires_at > now() then e.previous_secret end], null) as secrets
    from unnest(${jobs.map((job) => job.data.deliveryId)}::uuid[], ${jobs.map((job) => job.id)}::uuid[]) as job(delivery_id, id)
    join webhook_deliveries d on d.id = job.delivery_id and d.job_id = job.id
    join webhook_endpoints e on e.id = d.endpoint_id
    where d.status = 'pending'`.execute(db);
  const onDisabled = rows.filter((row) => !row.enabled);
  const setAside = onDisabled.length > 0 ? await setAsideDeliveries(db, onDisabled) : new Set<string>();
  return rows.filter((row) => !setAside.has(row.id)).map(({ enabled: _enabled, ...delivery }) => delivery);
}

/**
 * Deliveries of endpoints found disabled are kept pending and name no job until the endpoint is
 * enabled again (enableEndpoint queues them). The endpoint's row is share-locked: an enabling in
 * progress is waited for, and an endpoint enabled meanwhile keeps its deliveries, which go now.
 * Returns those set aside.
 */
async function setAsideDeliveries(db: DB, deliveries: readonly DueDelivery[]): Promise<Set<string>> {
  const { rows } = await sql<{ id: string }>`
    with disabled as (
      select id from webhook_endpoints where id = any(${[...new Set(deliveries.map((d) => d.endpoint_id))]}::uuid[]) and not enabled
      for share
    )
    update webhook_deliveries d set job_id = null
    from unnest(${deliveries.map((d) => d.id)}::uuid[], ${deliveries.map((d) => d.job_id)}::uuid[]) as named(id, job_id), disabled
    where d.id = named.id and d.job_id = named.job_id and d.endpoint_id = disabled.id
    returning d.id`.execute(db);
  return new Set(rows.map((row) => row.id));
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
  /** Why it failed, stable (`timeout`, `http_status`…); null for a success. */
  errorCode: WebhookFailureCode | null;
  responseExcerpt: string | null;
}

/**
 * Writes the outcome of attempts: each attempt is logged; a success marks its delivery delivered
 * and resets the endpoint's failure count; a failure queues the next attempt's job, to start after
 * the schedule's delay (or makes the delivery `dead` after the last one), and counts towards
 * disabling the endpoint. Only the job a delivery names changes it (one that lost that right still
 * logs its attempt). The attempts' jobs end in the same transaction.
 */
export async function recordAttempts(
  db: DB,
  attempts: { delivery: DueDelivery; outcome: AttemptOutcome }[],
  policy: { retryDelaysSeconds: readonly number[]; disableAfter: number },
): Promise<RecordedAttempts> {
  const succeeded = attempts.filter((a) => a.outcome.succeeded).map((a) => a.delivery);
  const failed = attempts.filter((a) => !a.outcome.succeeded).map((a) => a.delivery);
  if (attempts.length === 0) return { succeeded: 0, failed: 0, dead: 0 };
  const dead = await db.transaction().execute(async (trx) => {
    // The endpoints first, as deleting one locks it before its deliveries: an endpoint deleted
    // meanwhile waits for this transaction, or is gone with its deliveries before it reads them.
    await sql`select 1 from webhook_endpoints where id = any(${[...new Set(attempts.map((a) => a.delivery.endpoint_id))]}::uuid[])
      order by id for key share`.execute(trx);
    await logAttemptsAndSuccesses(trx, attempts, succeeded);
    const madeDead = failed.length > 0 ? await queueRetries(trx, failed, policy) : 0;
    await endJobs(
      trx,
      attempts.map((a) => a.delivery.job_id),
    );
    return madeDead;
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
  attempts: { delivery: DueDelivery; outcome: AttemptOutcome }[],
  succeeded: DueDelivery[],
): Promise<void> {
  const outcomes = attempts.map((a) => a.outcome);
  await sql`
    with delivered as (
      update webhook_deliveries d
      set status = 'delivered', attempt_count = attempt_count + 1, delivered_at = now(), job_id = null
      from unnest(${succeeded.map((d) => d.id)}::uuid[], ${succeeded.map((d) => d.job_id)}::uuid[]) as s(id, job_id)
      where d.id = s.id and d.job_id = s.job_id
    ), reset as (
      update webhook_endpoints set consecutive_failures = 0
      where id = any(${[...new Set(succeeded.map((d) => d.endpoint_id))]}::uuid[]) and consecutive_failures <> 0
    )
    insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code, succeeded, error, error_code, response_excerpt)
    select a.* from unnest(${attempts.map((a) => a.delivery.id)}::uuid[], ${outcomes.map((o) => o.attemptedAt)}::timestamptz[],
      ${outcomes.map((o) => o.durationMs)}::int[], ${outcomes.map((o) => o.statusCode)}::int[], ${outcomes.map((o) => o.succeeded)}::boolean[],
      ${outcomes.map((o) => o.error)}::text[], ${outcomes.map((o) => o.errorCode)}::text[], ${outcomes.map((o) => o.responseExcerpt)}::text[])
      as a(delivery_id, attempted_at, duration_ms, status_code, succeeded, error, error_code, response_excerpt)
    -- A delivery deleted with its endpoint while its attempt was in flight logs nothing.
    join webhook_deliveries d on d.id = a.delivery_id`.execute(db);
}

/**
 * Failures: each delivery's next attempt named and its job queued, to start after the schedule's
 * delay (`next_attempt_at` shows when), or the delivery `dead` after the last one; the endpoints'
 * failure counts raised, disabling those that reach the limit. Returns how many this made dead.
 */
async function queueRetries(
  trx: DB,
  deliveries: DueDelivery[],
  policy: { retryDelaysSeconds: readonly number[]; disableAfter: number },
): Promise<number> {
  const maxAttempts = policy.retryDelaysSeconds.length + 1;
  const outcomes = await sql<{ deliveryId: string; jobId: string | null; startAfter: Date }>`
    update webhook_deliveries d
    set attempt_count = attempt_count + 1,
      status = case when attempt_count + 1 >= ${maxAttempts} then 'dead' else 'pending' end,
      dead_at = case when attempt_count + 1 >= ${maxAttempts} then now() end,
      next_attempt_at = case when attempt_count + 1 >= ${maxAttempts} then next_attempt_at
        else now() + make_interval(secs => (${[...policy.retryDelaysSeconds]}::float8[])[attempt_count + 1]) end,
      job_id = case when attempt_count + 1 >= ${maxAttempts} then null else gen_random_uuid() end
    from unnest(${deliveries.map((d) => d.id)}::uuid[], ${deliveries.map((d) => d.job_id)}::uuid[]) as f(id, job_id)
    where d.id = f.id and d.job_id = f.job_id
    returning d.id as "deliveryId", d.job_id as "jobId", d.next_attempt_at as "startAfter"`.execute(trx);
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
  const retries = outcomes.rows.flatMap(({ jobId, ...retry }) => (jobId === null ? [] : [{ ...retry, jobId }]));
  await queueAttempts(trx, retries);
  return outcomes.rows.length - retries.length;
}

// ---------------------------------------------------------------------------------------------
// The queue's state, for the metrics

/** The delivery queue as the metrics show it, across every server process. */
export interface DeliveryQueueState {
  /** Pending deliveries: due, planned, or set aside while their endpoint is disabled. */
  pending: number;
  /** Pending deliveries whose next attempt's job is due now: waiting for a worker to take it. */
  due: number;
  /** How long the oldest of those has waited past its time; null when none is due. */
  oldest_due_seconds: number | null;
  /** Endpoints disabled, by their failures or by an operator. */
  disabled: number;
}

/**
 * Reads the queue from the delivery rows. A pending delivery that names a job is waiting for that
 * job, which starts at its `next_attempt_at`; one that names none is set aside, and not due.
 */
export async function readDeliveryQueue(db: DB): Promise<DeliveryQueueState> {
  const { rows } = await sql<DeliveryQueueState>`
    select count(*)::int as pending,
      (count(*) filter (where job_id is not null and next_attempt_at <= now()))::int as due,
      extract(epoch from now() - min(next_attempt_at) filter (where job_id is not null and next_attempt_at <= now()))::float8
        as oldest_due_seconds,
      (select count(*)::int from webhook_endpoints where not enabled) as disabled
    from webhook_deliveries where status = 'pending'`.execute(db);
  return rows[0]!;
}
