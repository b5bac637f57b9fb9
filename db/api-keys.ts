import { sql } from 'kysely';
import { type DB, type PreparedStatement, runPrepared } from './connection';
import { afterPosition, type ListPosition, positionOf } from './list-position';
import { type CountedRequests, type CountedRow, countedRequests, takeFromBucket } from './rate-limit';
import { parisDayEnd } from './render';
import type { ApiScope } from './tables';

export interface KeyLookup {
  id: string;
  orgId: string;
  orgName: string;
  scopes: ApiScope[];
  revoked: boolean;
  expiresAt: Date | null;
  expired: boolean;
  /** The requests counted, as the rate limit saw them; null when the key is not usable (nothing counted). */
  counted: CountedRequests | null;
}

/**
 * Finds a key by its hash ($1) and, when it is usable, counts $2 requests against its budget of
 * $3 per $4 seconds: one round trip for both, prepared (its planning costs more than its run).
 */
export const keyAndCountStatement: PreparedStatement = {
  name: 'api_key_request',
  text: `
  with found as (
    select k.id, k.org_id, o.name as org_name, k.scopes, k.revoked_at is not null as revoked,
           k.expires_at, coalesce(k.expires_at <= now(), false) as expired
    from api_keys k join organisations o on o.id = k.org_id
    where k.key_hash = $1
  ), counted as (${takeFromBucket(`select 'key:' || found.id as bucket from found where not found.revoked and not found.expired`, {
    requests: '$2::int',
    limit: '$3::int',
    windowSeconds: '$4::int',
  })})
  select found.*, counted.granted, counted.in_window, counted.reset_seconds
  from found left join counted on true`,
};

export async function findKeyAndCountRequests(
  db: DB,
  keyHash: Buffer,
  requests: number,
  limit: number,
  windowSeconds: number,
): Promise<KeyLookup | null> {
  const [row] = await runPrepared<{
    id: string;
    org_id: string;
    org_name: string;
    scopes: ApiScope[];
    revoked: boolean;
    expires_at: Date | null;
    expired: boolean;
    granted: number | null;
    in_window: number | null;
    reset_seconds: number | null;
  }>(db, keyAndCountStatement, [keyHash, requests, limit, windowSeconds]);
  if (!row) return null;
  return {
    id: row.id,
    orgId: row.org_id,
    orgName: row.org_name,
    scopes: row.scopes,
    revoked: row.revoked,
    expiresAt: row.expires_at,
    expired: row.expired,
    counted: row.granted === null ? null : countedRequests(row as CountedRow),
  };
}

/** What is known of a key, never the key itself. */
const keyColumns = ['id', 'org_id', 'key_prefix', 'label', 'scopes', 'expires_at', 'revoked_at', 'created_at', 'last_used_at'] as const;

export type ApiKeyRecord = Awaited<ReturnType<typeof findApiKey>> & {};

export async function createApiKey(
  db: DB,
  key: { orgId: string; keyHash: Buffer; keyPrefix: string; label: string | null; scopes: ApiScope[]; expiresAt: string | null },
) {
  return db
    .insertInto('api_keys')
    .values({
      org_id: key.orgId,
      key_hash: key.keyHash,
      key_prefix: key.keyPrefix,
      label: key.label,
      scopes: key.scopes,
      // An expiry date is the end of that day in Paris: the key works through the whole date.
      expires_at: key.expiresAt === null ? null : (parisDayEnd(key.expiresAt) as never),
    })
    .returning(keyColumns)
    .executeTakeFirstOrThrow();
}

/** Every key of an organisation, oldest first. */
export async function listApiKeys(db: DB, orgId: string) {
  return db.selectFrom('api_keys').select(keyColumns).where('org_id', '=', orgId).orderBy('created_at').orderBy('id').execute();
}

export type ApiKeyState = 'active' | 'expired' | 'revoked';

/**
 * A page of an organisation's keys, newest first, after the key at `after` (its creation instant
 * to the microsecond, as `position` gives it, and its id): `limit` of them, and one more when
 * there are more.
 */
export async function listApiKeysPage(db: DB, orgId: string, options: { state?: ApiKeyState; after: ListPosition | null; limit: number }) {
  let query = db
    .selectFrom('api_keys')
    .select(keyColumns)
    .select(positionOf(sql.ref('created_at')).as('position'))
    .where('org_id', '=', orgId);
  if (options.state === 'revoked') query = query.where('revoked_at', 'is not', null);
  if (options.state === 'expired') query = query.where('revoked_at', 'is', null).where('expires_at', '<=', sql<Date>`now()`);
  if (options.state === 'active')
    query = query
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]));
  if (options.after) query = query.where(afterPosition(sql.ref('created_at'), sql.ref('id'), options.after));
  return query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit + 1)
    .execute();
}

/** One key of an organisation; undefined when the organisation has no such key. */
export async function findApiKey(db: DB, orgId: string, keyId: string) {
  return db.selectFrom('api_keys').select(keyColumns).where('org_id', '=', orgId).where('id', '=', keyId).executeTakeFirst();
}

/** The organisation of a key (an operator names a key by its id alone); null when no key has this id. */
export async function findKeyOrganisation(db: DB, keyId: string): Promise<string | null> {
  const row = await db.selectFrom('api_keys').select('org_id').where('id', '=', keyId).executeTakeFirst();
  return row?.org_id ?? null;
}

/**
 * Revokes a key (of `orgId` when given); null when no such key exists. Revoking twice keeps the
 * first date, and says so (`revokedNow` false).
 */
export async function revokeApiKey(
  db: DB,
  keyId: string,
  orgId?: string,
): Promise<{ key: ApiKeyRecord; revokedAt: Date; revokedNow: boolean } | null> {
  let query = db
    .updateTable('api_keys')
    .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` as never })
    .where('id', '=', keyId);
  if (orgId !== undefined) query = query.where('org_id', '=', orgId);
  // RETURNING reads the updated row: its date is this transaction's now() only when this statement set it.
  const row = await query.returning([...keyColumns, sql<boolean>`revoked_at = now()`.as('revoked_now')]).executeTakeFirst();
  if (!row) return null;
  const { revoked_now, ...key } = row;
  return { key, revokedAt: key.revoked_at!, revokedNow: revoked_now };
}
