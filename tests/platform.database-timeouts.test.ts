import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { binaryCopyStatement, copyOutWhole, createDb, type DB } from '../db/connection';
import { streamRowChunks } from '../db/resources/list';
import { useTestDatabase } from './support/lifecycle';
import { startTcpProxy } from './support/tcp-proxy';

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

// A JSON page is PostgreSQL's binary COPY of its rows (db/resources/list.ts, copyResourcePage): it
// is bounded like any statement, by PostgreSQL's statement_timeout and by the answer limit of the
// process, which gives its connection up when the answer never comes (a partition).
describe('a page read as a COPY', () => {
  const sleepy = (seconds: number) => binaryCopyStatement(sql`select pg_sleep(${seconds})::text as slept`);

  it('is cancelled by PostgreSQL at the query time limit, and the connection serves on', async () => {
    await withLimitedDb(async (db) => {
      const started = Date.now();
      await expect(copyOutWhole(db, sleepy(2))).rejects.toThrow(/statement timeout/);
      expect(Date.now() - started).toBeLessThan(1300);
      expect((await copyOutWhole(db, sleepy(0))).bytes.length).toBeGreaterThan(0);
    });
  });

  it('fails with the error PostgreSQL sends after some rows, and the connection serves on', async () => {
    await withLimitedDb(async (db) => {
      // Rows 1 to 4999 are sent before row 5000 divides by zero.
      const failing = binaryCopyStatement(sql`select (1 / (5000 - g))::text as n from generate_series(1, 6000) g`);
      await expect(copyOutWhole(db, failing)).rejects.toThrow(/division by zero/);
      const { bytes: whole, sha256 } = await copyOutWhole(
        db,
        binaryCopyStatement(sql`select lpad(g::text, 100, '0') as n from generate_series(1, 5000) g`),
      );
      // Header (19 bytes), 5000 rows of 2 + 4 + 100 bytes, trailer (2 bytes): grown well past its first buffer,
      // every row's bytes in place (pg reuses the buffer each message was read into).
      expect(whole.length).toBe(19 + 5000 * 106 + 2);
      for (let row = 0; row < 5000; row++) {
        const field = 19 + row * 106 + 6;
        expect(whole.toString('latin1', field, field + 100)).toBe(String(row + 1).padStart(100, '0'));
      }
      // Hashed a step at a time as the bytes came, across the buffer's growth: the digest of them all.
      expect(sha256).toEqual(createHash('sha256').update(whole).digest());
    });
  });

  it('stops waiting at the answer limit when the answer never comes, and its connection is replaced', async () => {
    const direct = new URL(database.url);
    const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port) });
    const throughProxy = new URL(database.url);
    throughProxy.port = String(proxy.port);
    const db = createDb(throughProxy.toString(), { poolSize: 1, queryTimeoutMs, onConnectionLost: () => undefined });
    try {
      expect((await copyOutWhole(db, sleepy(0))).bytes.length).toBeGreaterThan(0);
      proxy.blackHole();
      const started = Date.now();
      await expect(copyOutWhole(db, sleepy(0))).rejects.toThrow(/Query read timeout/);
      // The answer limit is the query limit and one second: 1.3 s.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1200);
      expect(Date.now() - started).toBeLessThan(2500);
      proxy.restore();
      // The connection caught by the black hole was given up: a new one answers at once.
      const again = Date.now();
      expect((await copyOutWhole(db, sleepy(0))).bytes.length).toBeGreaterThan(0);
      expect(Date.now() - again).toBeLessThan(1000);
    } finally {
      await db.destroy();
      await proxy.close();
    }
  });
});
