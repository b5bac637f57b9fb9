import type { Kysely } from 'kysely';
import type { DB } from './connection';
import type { ActorKind, AuditOutcome, AuditTargetKind, Database } from './tables';

/** One line of the audit log, as the actions and the management API's refusals write it. */
export interface AuditEntry {
  orgId: string;
  actor: { kind: ActorKind; email: string | null; sessionId: string | null };
  /** An operationId of management.yaml, or openPortalSession. */
  action: string;
  target: { kind: AuditTargetKind; id: string } | null;
  outcome: AuditOutcome;
  refusalCode?: string | null;
  /** What the change was (a label, scopes, a count): never a key, a secret or a token. */
  details?: Record<string, unknown>;
  requestId?: string | null;
  clientAddress?: string | null;
}

/** Writes one audit line; given the change's transaction, it commits or rolls back with it. */
export async function recordAuditEvent(db: Kysely<Database>, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({
      org_id: entry.orgId,
      actor_kind: entry.actor.kind,
      actor_email: entry.actor.email,
      session_id: entry.actor.sessionId,
      action: entry.action,
      target_kind: entry.target?.kind ?? null,
      target_id: entry.target?.id ?? null,
      outcome: entry.outcome,
      refusal_code: entry.refusalCode ?? null,
      details: JSON.stringify(entry.details ?? {}),
      request_id: entry.requestId ?? null,
      client_address: entry.clientAddress ?? null,
    })
    .execute();
}

export interface AuditFilters {
  action?: string;
  outcome?: AuditOutcome;
  since?: Date;
  until?: Date;
}

/**
 * The organisation's audit lines, newest first (in the order they were written: their identity),
 * after the line `afterId`: `limit` of them, and one more when there are more (has_more).
 */
export async function listAuditEvents(db: DB, orgId: string, filters: AuditFilters, afterId: string | null, limit: number) {
  let query = db
    .selectFrom('audit_events')
    .select(['id', 'occurred_at', 'actor_kind', 'actor_email', 'action', 'target_kind', 'target_id', 'outcome', 'refusal_code', 'details'])
    .where('org_id', '=', orgId);
  if (filters.action) query = query.where('action', '=', filters.action);
  if (filters.outcome) query = query.where('outcome', '=', filters.outcome);
  if (filters.since) query = query.where('occurred_at', '>=', filters.since);
  if (filters.until) query = query.where('occurred_at', '<', filters.until);
  if (afterId !== null) query = query.where('id', '<', afterId as never);
  return query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}
