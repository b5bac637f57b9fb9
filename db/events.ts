import type { DB } from '../src/database';

export type EventType =
  | 'quiz.completed' | 'course.started' | 'programme.completed' | 'learner.enrolled'
  | 'learner.activated' | 'satisfaction.submitted' | 'ping';

/** The `learner` object every event's data carries. */
export interface EventLearner {
  user_id: string;
  email: string | null;
  name: string | null;
}

/**
 * Records an event. Call it with the transaction of the data change that causes the event, so that
 * there is never an event without its data, nor a committed change without its event.
 */
export async function recordEvent(trx: DB, event: { orgId: string; type: EventType; data: Record<string, unknown> }) {
  return trx.insertInto('events')
    .values({ org_id: event.orgId, type: event.type, data: JSON.stringify(event.data) })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
}
