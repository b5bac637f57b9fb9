import { sql } from 'kysely';
import { type DB, type PreparedStatement, runPrepared } from './connection';

/*
 * The rate limit's buckets (`key:<id>`, `address:<ip>`, and those of the management API): one
 * statement takes a request's place in a bucket's sliding window, shared by every server process.
 */

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
export function takeFromBucket(rows: string, params: { requests: string; limit: string; windowSeconds: string }): string {
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
export interface CountedRow {
  granted: number;
  in_window: number;
  reset_seconds: number;
}

/** The rate limit's figures: the share granted, the requests in the window, and when a place frees. */
export function countedRequests(row: CountedRow): CountedRequests {
  return { granted: row.granted, inWindow: row.in_window, resetSeconds: row.reset_seconds };
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
