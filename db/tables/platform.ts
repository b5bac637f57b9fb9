import type { ColumnType, Generated } from 'kysely';

/** Timestamps: written as Date or text, read back as Date. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamp the database fills in when it is not given. */
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export type MembershipStatus = 'actif' | 'invité' | 'suspendu';
export type LicenceType = 'standard' | 'tutorat';
export type LicenceStatus = 'disponible' | 'attribuée' | 'activée' | 'révoquée';
export type ApiScope = 'read' | 'write';

export interface OrganisationsTable {
  id: Generated<string>;
  name: string;
  allowed_email_domains: Generated<string[]>;
  created_at: GeneratedTimestamp;
}

export interface AccountsTable {
  id: Generated<string>;
  email: string;
  name: string | null;
  created_at: GeneratedTimestamp;
  first_login_at: Timestamp | null;
}

export interface MembershipsTable {
  id: Generated<string>;
  org_id: string;
  account_id: string;
  /** Copied from the account by triggers (organisations' reads never touch accounts): never write them. */
  email: ColumnType<string, string | undefined, never>;
  name: ColumnType<string | null, string | null | undefined, never>;
  status: MembershipStatus;
  invited_at: Timestamp | null;
  joined_at: Timestamp | null;
  created_at: GeneratedTimestamp;
}

export interface LicencesTable {
  id: Generated<string>;
  org_id: string;
  type: LicenceType;
  status: Generated<LicenceStatus>;
  membership_id: string | null;
  assigned_at: Timestamp | null;
  activated_at: Timestamp | null;
  revoked_at: Timestamp | null;
  created_at: GeneratedTimestamp;
}

export interface ApiKeysTable {
  id: Generated<string>;
  org_id: string;
  key_hash: Buffer;
  key_prefix: string;
  label: string | null;
  scopes: Generated<ApiScope[]>;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  created_at: GeneratedTimestamp;
  /** The latest request seen with this key, as of the last flush of the servers' usage tallies. */
  last_used_at: Timestamp | null;
}

/** A rate-limit bucket (`key:<id>`, `address:<ip>`, `session:<id>`, `management-token`): its accepted requests counted per second of the last window. */
export interface RateLimitSlotsTable {
  bucket: string;
  newest_second: number;
  /** Requests accepted in each second before `newest_second`, oldest first (as many as the window's seconds). */
  counts: number[];
  /** Requests accepted in the second `newest_second`. */
  current_count: number;
  /** The sum of `counts` and `current_count`: the requests accepted in the window. */
  in_window: number;
  granted: number;
}

export interface EventsTable {
  id: Generated<string>;
  org_id: string;
  type: string;
  data: ColumnType<unknown, string, string>;
  /** A test ping or an example sent to one endpoint: not counted as the organisation's activity. */
  sample: Generated<boolean>;
  created_at: GeneratedTimestamp;
}

export interface PlatformTables {
  organisations: OrganisationsTable;
  accounts: AccountsTable;
  memberships: MembershipsTable;
  licences: LicencesTable;
  api_keys: ApiKeysTable;
  rate_limit_slots: RateLimitSlotsTable;
  events: EventsTable;
}
