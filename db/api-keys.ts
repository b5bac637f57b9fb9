import { sql } from 'kysely';
import { type DB, type PreparedStatement, runPrepared } from './connection';
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

/** What the sliding window of a bucket said to a batch of requests. */
export interface CountedRequests {
  /** How many of the batch were accepted (the first ones). */
  granted: number;
  /** Accepted requests in the window after the batch. */
  inWindow: number;
  /** Seconds until the oldest accepted request leaves the window, freeing a place. */
  resetSeconds: number;
}

/**
 * Seconds until a place frees, read off the bucket as the statement leaves it: `counts[i]` (from 1)
 * counts the second `newest_second - window + i - 1`, which stops being counted once the clock
 * reaches `newest_second + i`; the oldest second still counted frees the first place (the current
 * one when the seconds before it hold nothing). Computed here, so that the statement returns three
 * numbers rather than the bucket's array.
 */
const resetSeconds = `greatest(1, ceil(newest_second
    + coalesce((select min(i) from generate_subscripts(counts, 1) as i where counts[i] > 0), array_length(counts, 1) + 1)
    - extract(epoch from clock_timestamp())))::int`;

/**
 * Takes $requests requests from a bucket's budget of $limit per $window seconds, over any window
 * (sliding): accepted requests are counted per second of the database clock (which every server
 * process shares), and a request is accepted while the window's seconds and the one before it hold
 * fewer than the limit. The bucket keeps the current second's count apart from the seconds before
 * it, and their sum: the statement runs for every request (or batch of one key's requests), and in
 * its common case, another request in the same second, it only adds to two integers. When the
 * second has changed, the counters shift first and the seconds that left the window are
 * subtracted. `granted` is written with the row so the statement can read back its own share.
 * The rule: docs/decisions.md#rate-limit.
 */
function takeFromBucket(rows: string, params: { requests: string; limit: string; windowSeconds: string }): string {
  const { requests, limit, windowSeconds: window } = params;
  const elapsed = '(excluded.newest_second - l.newest_second)';
  // Every second still counted, oldest first: the window's seconds and the current one.
  const seconds = '(l.counts || l.current_count)';
  const inWindowNow = `(case when ${elapsed} <= 0 then l.in_window when ${elapsed} > ${window} then 0
    else l.in_window - rate_limit_sum(${seconds}[1:${elapsed}]) end)`;
  const room = `greatest(0, least(${requests}, ${limit} - ${inWindowNow}))`;
  const first = `least(${requests}, ${limit})`;
  return `
    insert into rate_limit_slots as l (bucket, newest_second, counts, current_count, in_window, granted)
    select bucket, floor(extract(epoch from clock_timestamp()))::bigint, array_fill(0, array[${window}]), ${first}, ${first}, ${first}
    from (${rows}) r
    on conflict (bucket) do update set
      newest_second = greatest(l.newest_second, excluded.newest_second),
      granted = ${room},
      in_window = ${inWindowNow} + ${room},
      current_count = case when ${elapsed} <= 0 then l.current_count + ${room} else ${room} end,
      counts = case when ${elapsed} <= 0 then l.counts
        when ${elapsed} > ${window} then array_fill(0, array[${window}])
        else ${seconds}[${elapsed} + 1:] || array_fill(0, array[(${elapsed} - 1)::int]) end
    returning granted, in_window, ${resetSeconds} as reset_seconds`;
}

/** What the statements return of the bucket just counted. */
interface CountedRow {
  granted: number;
  in_window: number;
  reset_seconds: number;
}

/** The rate limit's figures: the share granted, the requests in the window, and when a place frees. */
function countedRequests(row: CountedRow): CountedRequests {
  return { granted: row.granted, inWindow: row.in_window, resetSeconds: row.reset_seconds };
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

const bucketCountStatement: PreparedStatement = {
  name: 'bucket_request',
  text: takeFromBucket('select $1::text as bucket', { requests: '1', limit: '$2::int', windowSeconds: '$3::int' }),
};

/** Counts one request against a bucket's budget (callers without a usable key, by address). */
export async function countRequest(db: DB, bucket: string, limit: number, windowSeconds: number): Promise<CountedRequests> {
  const [row] = await runPrepared<CountedRow>(db, bucketCountStatement, [bucket, limit, windowSeconds]);
  return countedRequests(row!);
}

/** Buckets whose every counted second has left the window are of no use to anyone. */
export async function deleteIdleBuckets(db: DB, windowSeconds: number): Promise<void> {
  await sql`delete from rate_limit_slots where newest_second < floor(extract(epoch from clock_timestamp())) - ${windowSeconds} - 1`.execute(
    db,
  );
}

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
    .returning(['id', 'scopes', 'expires_at'])
    .executeTakeFirstOrThrow();
}

export async function listApiKeys(db: DB, orgId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'key_prefix', 'label', 'scopes', 'expires_at', 'revoked_at', 'created_at'])
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * Revokes a key; null when no such key exists. Revoking twice keeps the first date, and says so
 * (`revokedNow` false).
 */
export async function revokeApiKey(db: DB, keyId: string): Promise<{ revokedAt: Date; revokedNow: boolean } | null> {
  const row = await db
    .updateTable('api_keys')
    .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` as never })
    .where('id', '=', keyId)
    // RETURNING reads the updated row: its date is this transaction's now() only when this statement set it.
    .returning(['revoked_at', sql<boolean>`revoked_at = now()`.as('revoked_now')])
    .executeTakeFirst();
  return row ? { revokedAt: row.revoked_at!, revokedNow: row.revoked_now } : null;
}
