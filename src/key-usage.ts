import { addKeyUsage, type KeyUsageCount } from '../db/api-key-usage';
import type { DB } from '../db/connection';
import { formatParisDate } from '../db/paris-time';

/** What the API did with a request that named a key: served, refused by its rate limit, or refused because the key is revoked or expired. */
export type KeyUsageOutcome = 'accepted' | 'rate_limited' | 'refused';

/** Requests counted per key and per Paris day by this process, written to the database now and then. */
export interface KeyUsageTally {
  /** Counts one request: a Map increment, no statement. */
  record(keyId: string, outcome: KeyUsageOutcome, at?: Date): void;
  /** Writes what was counted since the last flush (one statement; nothing when nothing was counted). */
  flush(): Promise<void>;
  /** Stops the periodic flush and writes what is left. */
  close(): Promise<void>;
}

/**
 * The tally of requests per key and per day (getApiUsage) and of keys' last use, kept in memory
 * and flushed every `flushMs` and at close: the request itself writes nothing more than its rate
 * limit's unlogged counter. A flush that fails keeps its counts for the next one; a process killed
 * without a stop loses at most one period of counts.
 */
export function createKeyUsageTally(db: DB, flushMs: number, onFlushError: (error: Error) => void = () => undefined): KeyUsageTally {
  let pending = new Map<string, KeyUsageCount>();
  let flushing: Promise<void> = Promise.resolve();

  function add(count: KeyUsageCount): void {
    const name = `${count.keyId} ${count.day}`;
    const current = pending.get(name);
    if (!current) {
      pending.set(name, { ...count });
      return;
    }
    current.accepted += count.accepted;
    current.rateLimited += count.rateLimited;
    current.refused += count.refused;
    if (count.lastUsedAt && (!current.lastUsedAt || current.lastUsedAt < count.lastUsedAt)) current.lastUsedAt = count.lastUsedAt;
  }

  async function writePending(): Promise<void> {
    if (pending.size === 0) return;
    const counts = [...pending.values()];
    pending = new Map();
    try {
      await addKeyUsage(db, counts);
    } catch (error) {
      for (const count of counts) add(count);
      throw error;
    }
  }

  function flush(): Promise<void> {
    // One flush at a time: a second one waits for the first, then writes what came meanwhile.
    flushing = flushing.catch(() => undefined).then(writePending);
    return flushing;
  }

  const timer = setInterval(() => flush().catch(onFlushError), flushMs);
  timer.unref();

  return {
    record(keyId, outcome, at = new Date()) {
      add({
        keyId,
        day: formatParisDate(at),
        accepted: outcome === 'accepted' ? 1 : 0,
        rateLimited: outcome === 'rate_limited' ? 1 : 0,
        refused: outcome === 'refused' ? 1 : 0,
        lastUsedAt: outcome === 'refused' ? null : at,
      });
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
