import { sql } from 'kysely';
import type { DB } from './connection';
import { afterPosition, type ListPosition, positionOf } from './list-position';
import type { DeliveryStatus, WebhookFailureCode } from './tables/webhooks';
import { type EventData, type EventType, queueAttempts, recordEventForEndpoint } from './webhooks';

/*
 * An organisation's webhook endpoints and their delivery log, as the management API and the
 * operator's commands change and read them (the actions in src/webhook-endpoints.ts). Every
 * statement takes the organisation and is scoped to it: an endpoint or a delivery of another one
 * is not found. Only the `…ForOperator` lookups find one by its id alone, for the operator's commands.
 * The functions that change several rows take the caller's transaction, which also writes the audit.
 */

/** How long the previous secret keeps signing after a rotation. */
export const previousSecretValiditySeconds = 24 * 60 * 60;

/** The most endpoints an organisation may have: each event fans out to all of them. */
export const endpointLimit = 20;

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

export type EndpointRecord = Awaited<ReturnType<typeof createEndpoint>>;

/**
 * The organisation's endpoints, counted with its row locked: creations in parallel each wait for
 * the previous one's commit, so that none goes past the limit. The lock leaves the organisation's
 * other rows free to be inserted (their foreign keys take a weaker one).
 */
export async function countEndpointsLocked(trx: DB, orgId: string): Promise<number> {
  await trx.selectFrom('organisations').select('id').where('id', '=', orgId).forNoKeyUpdate().execute();
  const { n } = await trx
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .executeTakeFirstOrThrow();
  return Number(n);
}

/** Endpoints of an organisation, oldest first, without their secrets (the operator's list). */
export async function listEndpoints(db: DB, orgId: string) {
  return db
    .selectFrom('webhook_endpoints')
    .select(endpointListing)
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** A page of the organisation's endpoints, newest first, after `after`: `limit` and one more when there are more. */
export async function listEndpointsPage(db: DB, orgId: string, after: ListPosition | null, limit: number) {
  let query = db
    .selectFrom('webhook_endpoints')
    .select([...endpointListing, positionOf(sql.ref('created_at')).as('position')])
    .where('org_id', '=', orgId);
  if (after) query = query.where(afterPosition(sql.ref('created_at'), sql.ref('id'), after));
  return query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

/** An endpoint of the organisation; null when it has no such endpoint. */
export async function findEndpoint(db: DB, orgId: string, id: string) {
  return (
    (await db
      .selectFrom('webhook_endpoints')
      .select(endpointListing)
      .where('id', '=', id)
      .where('org_id', '=', orgId)
      .executeTakeFirst()) ?? null
  );
}

/** An endpoint by its id alone, whatever its organisation: for the operator's commands, who name endpoints so. */
export async function findEndpointForOperator(db: DB, id: string) {
  return (await db.selectFrom('webhook_endpoints').select(endpointListing).where('id', '=', id).executeTakeFirst()) ?? null;
}

/** A new address or new event types; null when the organisation has no such endpoint. */
export async function updateEndpoint(db: DB, orgId: string, id: string, change: { url?: string; eventTypes?: readonly string[] }) {
  return (
    (await db
      .updateTable('webhook_endpoints')
      .set({
        ...(change.url !== undefined ? { url: change.url } : {}),
        ...(change.eventTypes !== undefined ? { event_types: [...change.eventTypes] } : {}),
      })
      .where('id', '=', id)
      .where('org_id', '=', orgId)
      .returning(endpointListing)
      .executeTakeFirst()) ?? null
  );
}

/**
 * Deletes an endpoint and, with it, its deliveries and their attempts; null when the organisation
 * has no such endpoint. An attempt in flight meanwhile records nothing (db/webhooks.ts).
 */
export async function deleteEndpoint(db: DB, orgId: string, id: string) {
  return (
    (await db
      .deleteFrom('webhook_endpoints')
      .where('id', '=', id)
      .where('org_id', '=', orgId)
      .returning(endpointListing)
      .executeTakeFirst()) ?? null
  );
}

/** The operator disables an endpoint: nothing is attempted, pending deliveries are kept. */
export async function disableEndpoint(db: DB, orgId: string, id: string) {
  return (
    (await db
      .updateTable('webhook_endpoints')
      .set({ enabled: false, disabled_at: sql`coalesce(disabled_at, now())`, disabled_reason: sql`coalesce(disabled_reason, 'operator')` })
      .where('id', '=', id)
      .where('org_id', '=', orgId)
      .returning(endpointListing)
      .executeTakeFirst()) ?? null
  );
}

/**
 * (Re-)enables an endpoint with a fresh failure count, and resumes its pending deliveries, each at
 * its own time: those whose job came while it was disabled (they name none) get a job that starts
 * at once; the others keep theirs (a retry planned in 6 h stays in 6 h). `resumed_deliveries`
 * counts them all. In the caller's transaction.
 */
export async function enableEndpoint(trx: DB, orgId: string, id: string) {
  const endpoint = await trx
    .updateTable('webhook_endpoints')
    .set({ enabled: true, consecutive_failures: 0, disabled_at: null, disabled_reason: null })
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .returning(endpointListing)
    .executeTakeFirst();
  if (!endpoint) return null;
  const { rows } = await sql<{ deliveryId: string; jobId: string | null }>`
    with requeued as (
      update webhook_deliveries set job_id = gen_random_uuid(), next_attempt_at = now()
      where endpoint_id = ${id} and status = 'pending' and job_id is null
      returning id, job_id
    )
    select d.id as "deliveryId", requeued.job_id as "jobId"
    from webhook_deliveries d left join requeued on requeued.id = d.id
    where d.endpoint_id = ${id} and d.status = 'pending'`.execute(trx);
  await queueAttempts(
    trx,
    rows.flatMap((row) => (row.jobId ? [{ deliveryId: row.deliveryId, jobId: row.jobId }] : [])),
  );
  return { ...endpoint, resumed_deliveries: rows.length };
}

/** A new current secret; the old one keeps signing for 24 hours. */
export async function rotateEndpointSecret(db: DB, orgId: string, id: string, newSecret: string) {
  return (
    (await db
      .updateTable('webhook_endpoints')
      .set({
        previous_secret: sql`secret`,
        previous_secret_expires_at: sql`now() + make_interval(secs => ${previousSecretValiditySeconds})`,
        secret: newSecret,
      })
      .where('id', '=', id)
      .where('org_id', '=', orgId)
      .returning(endpointListing)
      .executeTakeFirst()) ?? null
  );
}

/**
 * An event of this type and data sent, signed, to this endpoint only (the test ping, an example),
 * queued like any delivery, in the caller's transaction; null when the organisation has no such
 * endpoint.
 */
export async function sendToEndpoint<T extends EventType>(trx: DB, orgId: string, endpointId: string, type: T, data: EventData<T>) {
  const endpoint = await findEndpoint(trx, orgId, endpointId);
  if (!endpoint) return null;
  const queued = await recordEventForEndpoint(trx, { orgId, type, data }, endpointId);
  return { ...queued, endpoint };
}

/**
 * A delivered or dead delivery sent again: same id, same body, a new cycle of attempts. In the
 * caller's transaction; null when the organisation has no such delivery, `replayed: false` when it
 * is still pending.
 */
export async function replayDelivery(trx: DB, orgId: string, deliveryId: string) {
  const current = await trx
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select(['d.id', 'd.status', 'd.endpoint_id'])
    .where('d.id', '=', deliveryId)
    .where('e.org_id', '=', orgId)
    .forUpdate('d')
    .executeTakeFirst();
  if (!current) return null;
  if (current.status === 'pending') return { ...current, replayed: false as const };
  const replayed = await trx
    .updateTable('webhook_deliveries')
    .set({
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: sql`now()`,
      job_id: sql`gen_random_uuid()`,
      delivered_at: null,
      dead_at: null,
      replay_count: sql`replay_count + 1`,
    })
    .where('id', '=', deliveryId)
    .returning('job_id')
    .executeTakeFirstOrThrow();
  await queueAttempts(trx, [{ deliveryId, jobId: replayed.job_id! }]);
  return { ...current, status: 'pending' as DeliveryStatus, replayed: true as const };
}

/**
 * Every dead delivery of the endpoint created since `since`, sent again as a replay is, in the
 * caller's transaction. Returns how many.
 */
export async function recoverDeadDeliveries(trx: DB, orgId: string, endpointId: string, since: Date): Promise<number> {
  const { rows } = await sql<{ deliveryId: string; jobId: string }>`
    update webhook_deliveries
    set status = 'pending', attempt_count = 0, next_attempt_at = now(), job_id = gen_random_uuid(),
      delivered_at = null, dead_at = null, replay_count = replay_count + 1
    where endpoint_id = (select id from webhook_endpoints where id = ${endpointId} and org_id = ${orgId})
      and status = 'dead' and created_at >= ${since}
    returning id as "deliveryId", job_id as "jobId"`.execute(trx);
  await queueAttempts(trx, rows);
  return rows.length;
}

export interface DeliveryFilters {
  deliveryId?: string;
  endpointId?: string;
  status?: DeliveryStatus;
  eventType?: string;
  since?: Date;
  until?: Date;
}

/** The attempts a delivery of the log shows, the latest ones. */
export const attemptsShown = 20;

/**
 * The organisation's delivery log, newest first, after `after`: `limit` deliveries and one more
 * when there are more, each with its latest attempts (oldest first) and how many it had. Each of
 * the organisation's endpoints (at most 20) gives its newest deliveries from its own index range.
 */
export async function listDeliveriesPage(db: DB, orgId: string, filters: DeliveryFilters, after: ListPosition | null, limit: number) {
  const conditions = [sql`d.endpoint_id = e.id`];
  if (filters.deliveryId) conditions.push(sql`d.id = ${filters.deliveryId}`);
  if (filters.status) conditions.push(sql`d.status = ${filters.status}`);
  if (filters.eventType) conditions.push(sql`d.event_type = ${filters.eventType}`);
  if (filters.since) conditions.push(sql`d.created_at >= ${filters.since}`);
  if (filters.until) conditions.push(sql`d.created_at < ${filters.until}`);
  if (after) conditions.push(afterPosition(sql.ref('d.created_at'), sql.ref('d.id'), after));
  const { rows: deliveries } = await sql<DeliveryRow>`
    select d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempt_count, d.replay_count, d.job_id, d.body,
      d.next_attempt_at, d.created_at, d.delivered_at, d.dead_at,
      ${positionOf(sql.ref('d.created_at'))} as position, e.enabled as endpoint_enabled
    from webhook_endpoints e
    cross join lateral (
      select * from webhook_deliveries d where ${sql.join(conditions, sql` and `)}
      order by d.created_at desc, d.id desc limit ${limit + 1}
    ) d
    where e.org_id = ${orgId} ${filters.endpointId ? sql`and e.id = ${filters.endpointId}` : sql``}
    order by d.created_at desc, d.id desc
    limit ${limit + 1}`.execute(db);
  if (deliveries.length === 0) return [];
  const { rows: attempts } = await sql<AttemptRow & { delivery_id: string; attempt_total: number }>`
    select a.delivery_id, a.attempted_at, a.duration_ms, a.status_code, a.succeeded, a.error, a.error_code, a.response_excerpt, a.attempt_total
    from unnest(${deliveries.map((d) => d.id)}::uuid[]) as shown(id)
    cross join lateral (
      select a.*, count(*) over ()::int as attempt_total, row_number() over (order by a.id desc) as recency
      from webhook_attempts a where a.delivery_id = shown.id
    ) a
    where a.recency <= ${attemptsShown}
    order by a.delivery_id, a.id`.execute(db);
  return deliveries.map((delivery) => {
    const own = attempts.filter((attempt) => attempt.delivery_id === delivery.id);
    return {
      ...delivery,
      attempt_total: own[0]?.attempt_total ?? 0,
      attempts: own.map(({ delivery_id: _delivery, attempt_total: _total, ...attempt }) => attempt),
    };
  });
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempt_count: number;
  replay_count: number;
  /** The job of the next attempt; null when none is planned (delivered, dead, or set aside while the endpoint is disabled). */
  job_id: string | null;
  /** The JSON body sent, byte for byte. */
  body: string;
  /** Whether its endpoint is enabled: a disabled one's deliveries wait for it. */
  endpoint_enabled: boolean;
  next_attempt_at: Date;
  created_at: Date;
  delivered_at: Date | null;
  dead_at: Date | null;
  position: string;
}

interface AttemptRow {
  attempted_at: Date;
  duration_ms: number;
  status_code: number | null;
  succeeded: boolean;
  error: string | null;
  error_code: WebhookFailureCode | null;
  response_excerpt: string | null;
}

export type LoggedDelivery = Awaited<ReturnType<typeof listDeliveriesPage>>[number];

/** A delivery by its id alone, with its organisation: for the operator's commands, who name deliveries so. */
export async function findDeliveryForOperator(db: DB, deliveryId: string) {
  return (
    (await db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .select(['d.id', 'd.endpoint_id', 'd.status', 'e.org_id'])
      .where('d.id', '=', deliveryId)
      .executeTakeFirst()) ?? null
  );
}
