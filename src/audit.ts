import { type AuditEntry, recordAuditEvent } from '../db/audit';
import type { DB } from '../db/connection';
import type { ActorKind } from '../db/tables';

/** Who asks for a change, as the audit log records them, with the request that asked. */
export interface Actor {
  kind: ActorKind;
  email: string | null;
  sessionId: string | null;
  requestId?: string | null;
  clientAddress?: string | null;
}

/** A change made, as its audit line names it: an operationId of management.yaml, its target and what changed (never a secret). */
export interface Change {
  orgId: string;
  action: string;
  target: AuditEntry['target'];
  details?: Record<string, unknown>;
}

/** Records a change that was made, in the change's transaction: the line commits or rolls back with it. */
export async function recordChange(trx: DB, actor: Actor, change: Change): Promise<void> {
  await recordAuditEvent(trx, {
    ...change,
    actor,
    outcome: 'succeeded',
    requestId: actor.requestId ?? null,
    clientAddress: actor.clientAddress ?? null,
  });
}

/**
 * Runs a change in a transaction and, when it found what it changes (not null), records it there
 * with the details its result gives: both commit or neither does.
 */
export async function auditedChange<Result>(
  db: DB,
  actor: Actor,
  change: Omit<Change, 'details'>,
  run: (trx: DB) => Promise<Result | null>,
  details: (result: Result) => Record<string, unknown> = () => ({}),
): Promise<Result | null> {
  return db.transaction().execute(async (trx) => {
    const result = await run(trx);
    if (result !== null) await recordChange(trx, actor, { ...change, details: details(result) });
    return result;
  });
}
