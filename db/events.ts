import type { DB } from '../src/database';
import { eventBody } from '../src/webhooks/envelope';
import { queueEventDeliveries } from './webhooks';

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
 */
export async function recordEvent(trx: DB, event: { orgId: string; type: EventType; data: Record<string, unknown> }): Promise<RecordedEvent> {
  if (!trx.isTransaction) return trx.transaction().execute((own) => recordEvent(own, event));
  const row = await trx.insertInto('events')
    .values({ org_id: event.orgId, type: event.type, data: JSON.stringify(event.data) })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
  const body = eventBody({ id: row.id, type: event.type, createdAt: row.created_at, data: event.data });
  await queueEventDeliveries(trx, { eventId: row.id, orgId: event.orgId, type: event.type, body });
  return { ...row, body };
}
