import { sql } from 'kysely';
import type { DB } from '../src/database';
import { eventBodySql } from '../src/webhooks/envelope';
import { deliveryChannel, queueDeliveryJobs } from '../src/webhooks/job-queue';

export type EventType =
  | 'quiz.completed' | 'course.started' | 'programme.completed' | 'learner.enrolled'
  | 'learner.activated' | 'satisfaction.submitted' | 'ping';

/** The event types an endpoint can subscribe to; `ping` goes only to the endpoint being tested. */
export const subscribableEventTypes = [
  'quiz.completed', 'course.started', 'programme.completed', 'learner.enrolled', 'learner.activated', 'satisfaction.submitted',
] as const satisfies readonly EventType[];

/** The `learner` object every event's data carries. */
export interface EventLearner {
  user_id: string;
  email: string | null;
  name: string | null;
}

export interface RecordedEvent {
  id: string;
  created_at: Date;
  /** The webhook body of this event, byte for byte what every endpoint receives. */
  body: string;
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
export async function recordEvent(trx: DB, event: { orgId: string; type: EventType; data: Record<string, unknown> }): Promise<RecordedEvent> {
  if (!trx.isTransaction) return trx.transaction().execute((own) => recordEvent(own, event));
  const dataJson = JSON.stringify(event.data);
  const { rows: [recorded] } = await sql<RecordedEvent & { delivery_ids: string[] }>`
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
  await queueDeliveryJobs(trx, deliveryIds.map((id) => ({ id })), { wake: false });
  return result;
}
