import { type CountedRequests, findKeyAndCountRequests, type KeyLookup } from '../../db/api-keys';
import type { DB } from '../../db/connection';

/** A key as one request saw it: its own verdict of the rate limit, or null when the key is not usable. */
export interface CountedKey extends Omit<KeyLookup, 'counted'> {
  verdict: RateLimitVerdict | null;
}

/** One request against its bucket's budget: accepted with `remaining` places left, or refused. */
export interface RateLimitVerdict {
  accepted: boolean;
  remaining: number;
  /** Seconds until the oldest accepted request leaves the window, freeing a place. */
  resetSeconds: number;
}

/** The verdict of the request at `index` (0-based) of a batch counted together. */
export function verdictOf(counted: CountedRequests, index: number, limit: number): RateLimitVerdict {
  if (index >= counted.granted) return { accepted: false, remaining: 0, resetSeconds: counted.resetSeconds };
  const place = counted.inWindow - counted.granted + index + 1;
  return { accepted: true, remaining: limit - place, resetSeconds: counted.resetSeconds };
}

interface Waiting {
  resolve(lookup: CountedKey | null): void;
  reject(error: unknown): void;
}

/**
 * Looks up keys and counts their requests against the shared budget, one statement per key at a
 * time: the requests of a key that arrive while its statement is in flight are counted together
 * by the next one. Under parallel load (a BI tool fetching pages side by side) that is one round
 * trip for many requests instead of one each, and every request still gets its own exact verdict:
 * the batch's first `granted` requests are accepted, in order, the others refused.
 */
export function createRequestCounter(db: DB, limit: number, windowSeconds: number) {
  const waitingByKey = new Map<string, Waiting[]>();
  const inFlight = new Set<string>();

  async function countBatch(key: string, keyHash: Buffer): Promise<void> {
    const batch = waitingByKey.get(key)!;
    waitingByKey.delete(key);
    inFlight.add(key);
    try {
      const lookup = await findKeyAndCountRequests(db, keyHash, batch.length, limit, windowSeconds);
      for (const [index, waiting] of batch.entries()) {
        if (!lookup) {
          waiting.resolve(null);
          continue;
        }
        const { counted, ...key } = lookup;
        waiting.resolve({ ...key, verdict: counted === null ? null : verdictOf(counted, index, limit) });
      }
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    } finally {
      inFlight.delete(key);
      // The requests that came in the meantime go together now.
      if (waitingByKey.has(key)) void countBatch(key, keyHash);
    }
  }

  /** The key of this hash, with this request counted (null: no such key); `key` names the hash (its base64, given when the caller has it). */
  return function countRequest(keyHash: Buffer, key = keyHash.toString('base64')): Promise<CountedKey | null> {
    return new Promise((resolve, reject) => {
      const waiting = waitingByKey.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else waitingByKey.set(key, [{ resolve, reject }]);
      if (!inFlight.has(key)) void countBatch(key, keyHash);
    });
  };
}
