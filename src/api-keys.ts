import { createHash, randomBytes } from 'node:crypto';

export const apiKeyPrefix = 'sk_live_';

/** A new key: the prefix and 32 random bytes. Shown once; only its hash is stored. */
export function generateApiKey(): string {
  return apiKeyPrefix + randomBytes(32).toString('base64url');
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** What a listing shows of a key: enough to recognise it, too little to use it. */
export function displayPrefix(key: string): string {
  return key.slice(0, apiKeyPrefix.length + 6);
}
