import { sql } from 'kysely';
import type { DB } from './connection';

/** What one server counted of one key on one Paris day since its last flush. */
export interface KeyUsageCount {
  keyId: string;
  /** A Paris calendar day, `YYYY-MM-DD`. */
  day: string;
  accepted: number;
  rateLimited: number;
  refused: number;
  /** The latest request that used the key (accepted or refused by its rate limit); null when none did. */
  lastUsedAt: Date | null;
}

/**
 * Adds a server's counts to the daily rows and moves each key's last use forward, in one
 * statement. Additions, so that every server's flushes add up whatever their order; a key deleted
 * meanwhile is skipped (the join) rather than failing the others.
 */
export async function addKeyUsage(db: DB, counts: readonly KeyUsageCount[]): Promise<void> {
  if (counts.length === 0) return;
  const column = <T>(pick: (count: KeyUsageCount) => T) => counts.map(pick);
  await sql`
    with counted as (
      select * from unnest(
        ${column((c) => c.keyId)}::uuid[], ${column((c) => c.day)}::date[], ${column((c) => c.accepted)}::int[],
        ${column((c) => c.rateLimited)}::int[], ${column((c) => c.refused)}::int[], ${column((c) => c.lastUsedAt)}::timestamptz[]
      ) as u(key_id, day, accepted, rate_limited, refused, last_used_at)
    ), added as (
      insert into api_key_daily_usage as usage (key_id, day, accepted, rate_limited, refused)
      select c.key_id, c.day, c.accepted, c.rate_limited, c.refused from counted c join api_keys k on k.id = c.key_id
      on conflict (key_id, day) do update set
        accepted = usage.accepted + excluded.accepted,
        rate_limited = usage.rate_limited + excluded.rate_limited,
        refused = usage.refused + excluded.refused
    )
    update api_keys k set last_used_at = u.last_used_at
    from (select key_id, max(last_used_at) as last_used_at from counted group by key_id) u
    where k.id = u.key_id and u.last_used_at is not null and (k.last_used_at is null or k.last_used_at < u.last_used_at)`.execute(db);
}

/** One key's requests on one day. */
export interface KeyDayUsage {
  date: string;
  accepted: number;
  rate_limited: number;
  refused: number;
}

export interface KeyUsageRow {
  key_id: string;
  label: string | null;
  key_prefix: string;
  revoked_at: Date | null;
  expires_at: Date | null;
  /** Every day from `from` to `to`, zeros included, oldest first. */
  days: KeyDayUsage[];
}

/**
 * The organisation's keys with their requests per day from `from` to `to` (Paris days, both
 * included): every key used in those days, and every key still usable at their start.
 */
export async function keyUsageByDay(db: DB, orgId: string, from: string, to: string): Promise<KeyUsageRow[]> {
  const { rows } = await sql<KeyUsageRow>`
    select k.id as key_id, k.label, k.key_prefix, k.revoked_at, k.expires_at,
      coalesce((
        select json_agg(json_build_object(
          'date', to_char(d.day, 'YYYY-MM-DD'),
          'accepted', coalesce(u.accepted, 0), 'rate_limited', coalesce(u.rate_limited, 0), 'refused', coalesce(u.refused, 0)
        ) order by d.day)
        from generate_series(${from}::date, ${to}::date, interval '1 day') as d(day)
        left join api_key_daily_usage u on u.key_id = k.id and u.day = d.day::date
      ), '[]') as days
    from api_keys k
    where k.org_id = ${orgId}
      and (
        ((k.revoked_at is null or k.revoked_at >= (${from}::date::timestamp at time zone 'Europe/Paris'))
          and (k.expires_at is null or k.expires_at > (${from}::date::timestamp at time zone 'Europe/Paris')))
        or exists (select 1 from api_key_daily_usage u where u.key_id = k.id and u.day between ${from}::date and ${to}::date)
      )
    order by k.created_at desc, k.id desc`.execute(db);
  return rows;
}
