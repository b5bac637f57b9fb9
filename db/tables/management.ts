import type { ColumnType, Generated } from 'kysely';

/** Timestamps: written as Date or text, read back as Date. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamp the database fills in when it is not given. */
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;

/** Who acted through the management API or the operator commands. */
export type ActorKind = 'session' | 'platform' | 'operator';
export type AuditOutcome = 'succeeded' | 'refused';
export type AuditTargetKind = 'api_key' | 'webhook_endpoint' | 'webhook_delivery' | 'portal_link' | 'portal_session';
export type SessionEndReason = 'logout' | 'revoked' | 'replaced';

export interface PortalLinksTable {
  id: Generated<string>;
  org_id: string;
  /** SHA-256 of the link's token; the token itself is never stored. */
  token_hash: Buffer;
  actor_email: string;
  read_only: boolean;
  /** The session's lifetime, as PostgreSQL's interval text (`1 day`, `02:00:00`). */
  session_lifetime: ColumnType<unknown, string, string>;
  created_by: 'platform' | 'operator';
  created_at: GeneratedTimestamp;
  expires_at: Timestamp;
  redeemed_at: Timestamp | null;
}

export interface PortalSessionsTable {
  id: Generated<string>;
  org_id: string;
  link_id: string;
  /** SHA-256 of the cookie's value. */
  token_hash: Buffer;
  actor_email: string;
  read_only: boolean;
  created_at: GeneratedTimestamp;
  expires_at: Timestamp;
  ended_at: Timestamp | null;
  end_reason: SessionEndReason | null;
}

export interface AuditEventsTable {
  /** A bigint identity: read back as text. */
  id: ColumnType<string, never, never>;
  org_id: string;
  occurred_at: GeneratedTimestamp;
  actor_kind: ActorKind;
  actor_email: string | null;
  session_id: string | null;
  /** An operationId of management.yaml, or openPortalSession. */
  action: string;
  target_kind: AuditTargetKind | null;
  target_id: string | null;
  outcome: AuditOutcome;
  refusal_code: string | null;
  details: ColumnType<Record<string, unknown>, string | undefined, string>;
  request_id: string | null;
  client_address: string | null;
}

export interface ApiKeyDailyUsageTable {
  key_id: string;
  /** A Paris calendar day, `YYYY-MM-DD`. */
  day: string;
  accepted: Generated<number>;
  rate_limited: Generated<number>;
  /** Requests of this key refused because it was revoked or expired. */
  refused: Generated<number>;
}

export interface ManagementTables {
  portal_links: PortalLinksTable;
  portal_sessions: PortalSessionsTable;
  audit_events: AuditEventsTable;
  api_key_daily_usage: ApiKeyDailyUsageTable;
}
