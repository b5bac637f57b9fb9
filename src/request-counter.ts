import { findKeyAndCountRequests, type KeyLookup } from '../db/api-keys';
import type { DB } from './database';

interface Waiting {
  resolve(lookup: KeyLookup | null): void;
  reject(error: unknown): void;
}

/**
 * Looks up keys and counts their requests in the shared rate-limit window, one statement per key at
 * a time: the requests of a key that arrive while its statement is in flight are counted together
 * by the next one. Under parallel load (a BI tool fetching pages side by side) that is one round
 * trip for many requests instead of one each, and every request still gets its own exact place in
 * the window: a batch of n that brings the count to h holds the places h - n + 1 to h.
 */
export function createRequestCounter(db: DB, windowSeconds: number) {
  const waitingByKey = new Map<string, Waiting[]>();
  const inFlight = new Set<string>();

  async function countBatch(key: string, keyHash: Buffer): Promise<void> {
    const batch = waitingByKey.get(key)!;
    waitingByKey.delete(key);
    inFlight.add(key);
    try {
      const lookup = await findKeyAndCountRequests(db, keyHash, windowSeconds, batch.length);
      batch.forEach((waiting, index) => waiting.resolve(
        lookup && lookup.hits !== null ? { ...lookup, hits: lookup.hits - batch.length + 1 + index } : lookup,
      ));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    } finally {
      inFlight.delete(key);
      // The requests that came in the meantime go together now.
      if (waitingByKey.has(key)) void countBatch(key, keyHash);
    }
  }

  /** The key of this hash, with this request counted (null: no such key). */
  return function countRequest(keyHash: Buffer): Promise<KeyLookup | null> {
    const key = keyHash.toString('base64');
    return new Promise((resolve, reject) => {
      const waiting = waitingByKey.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else waitingByKey.set(key, [{ resolve, reject }]);
      if (!inFlight.has(key)) void countBatch(key, keyHash);
    });
  };
}
