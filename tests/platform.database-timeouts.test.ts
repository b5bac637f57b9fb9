import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createDb, type DB } from '../db/connection';
import { streamRowChunks } from '../db/resources/list';
import { useTestDatabase } from './support/lifecycle';

// The database time limits (DB_QUERY_TIMEOUT_MS) bound each answer, not an export's whole life: a
// CSV export to a slow reader may last minutes, each chunk must come in time.

const database = useTestDatabase();
const queryTimeoutMs = 300;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A pool of one connection with the limits of a server whose DB_QUERY_TIMEOUT_MS is 300 ms. */
async function withLimitedDb(work: (db: DB) => Promise<void>): Promise<void> {
  const db = createDb(database.url, { poolSize: 1, queryTimeoutMs });
  try {
    await work(db);
  } finally {
    await db.destroy();
  }
}

const numbers = (db: DB, count: number, slowAt = 0) =>
  db
    .selectFrom(sql`generate_series(1, ${count})`.as('g'))
    .select([sql<number>`g`.as('n'), sql`pg_sleep(case when g = ${slowAt} then 2 else 0 end)`.as('slept')]) as never;

describe('an export', () => {
  it('outlives the query time limit when its reader is slow, and the connection gets its limit back', async () => {
    await withLimitedDb(async (db) => {
      const started = Date.now();
      let rows = 0;
      for await (const chunk of streamRowChunks(db, numbers(db, 3000), null)) {
        rows += chunk.length;
        await pause(600);
      }
      expect(rows).toBe(3000);
      // Three chunks of 1,000 read slowly: far beyond 300 ms (and the client's 1.3 s).
      expect(Date.now() - started).toBeGreaterThan(1500);
      // The one connection of the pool is limited again for the next statements.
      const { rows: setting } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(db);
      expect(setting[0]!.statement_timeout).toBe(`${queryTimeoutMs}ms`);
      await expect(sql`select pg_sleep(1)`.execute(db)).rejects.toThrow(/statement timeout/);
    });
  });

  it('fails fast when one chunk does not come in time, and its connection is replaced', async () => {
    await withLimitedDb(async (db) => {
      const started = Date.now();
      const reading = (async () => {
        for await (const _chunk of streamRowChunks(db, numbers(db, 3000, 1500), null)) {
          // The second chunk sleeps 2 s in PostgreSQL: past the 1.3 s the client waits for an answer.
        }
      })();
      await expect(reading).rejects.toThrow(/Query read timeout/);
      expect(Date.now() - started).toBeLessThan(2000);
      // The pool's one connection was given up and a new one serves.
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db);
      expect(rows).toEqual([{ one: 1 }]);
    });
  });
});
