import type { ColumnType, Generated } from 'kysely';
import type { components } from '../../codegen/management';

/** Timestamps: written as Date or text, read back as Date. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamp the database fills in when it is not given. */
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export type DeliveryStatus = 'pending' | 'delivered' | 'dead';

/** Why an attempt failed, as the management API declares it. */
export type WebhookFailureCode = components['schemas']['WebhookFailureCode'];

export interface WebhookEndpointsTable {
  id: Generated<string>;
  org_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Timestamp | null;
  event_types: string[];
  enabled: Generated<boolean>;
  consecutive_failures: Generated<number>;
  disabled_at: Timestamp | null;
  disabled_reason: 'failures' | 'operator' | null;
  created_at: GeneratedTimestamp;
}

export interface WebhookDeliveriesTable {
  id: Generated<string>;
  event_id: string;
  endpoint_id: string;
  /** Its event's type, copied so that the worker's claim needs no join. */
  event_type: string;
  body: string;
  status: Generated<DeliveryStatus>;
  attempt_count: Generated<number>;
  /** When the next attempt was planned for, as shown in the delivery log; its job decides. */
  next_attempt_at: GeneratedTimestamp;
  /** The pg-boss job of the next attempt, the only one that may make it; null when none is planned. */
  job_id: string | null;
  delivered_at: Timestamp | null;
  dead_at: Timestamp | null;
  replay_count: Generated<number>;
  created_at: GeneratedTimestamp;
}

export interface WebhookAttemptsTable {
  id: ColumnType<number, never, never>;
  delivery_id: string;
  attempted_at: Timestamp;
  duration_ms: number;
  status_code: number | null;
  succeeded: boolean;
  error: string | null;
  error_code: WebhookFailureCode | null;
  response_excerpt: string | null;
}

/** Tables of webhook endpoints, their deliveries and the log of attempts. */
export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}
