import { createHash, randomBytes } from 'node:crypto';
import { type ApiKeyRecord, createApiKey, revokeApiKey } from '../db/api-keys';
import type { DB } from '../db/connection';
import { formatParisDate } from '../db/paris-time';
import type { ApiScope } from '../db/tables';
import { type Actor, auditedChange, recordChange } from './audit';

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

/** Where a key stands now: revoked (whatever its expiry), past its last day, or usable. */
export type KeyState = 'active' | 'expired' | 'revoked';

export function keyState(key: { revoked_at: Date | null; expires_at: Date | null }, now: Date): KeyState {
  if (key.revoked_at) return 'revoked';
  if (key.expires_at && key.expires_at <= now) return 'expired';
  return 'active';
}

/** The last Paris day a key works: it expires when the next one begins. */
export function lastValidDay(expiresAt: Date): string {
  return formatParisDate(new Date(expiresAt.getTime() - 1));
}

/** An expiry date before today (Paris): the key would be refused from its creation. */
export class ExpiryInThePast extends Error {
  override name = 'ExpiryInThePast';

  constructor(
    readonly expiresOn: string,
    readonly today: string,
  ) {
    super(`expiry ${expiresOn} is before ${today}`);
  }
}

/**
 * Creates a key for an organisation and records it in the audit log, in one transaction: the one
 * implementation behind the management API and the operator's command. Returns the whole key,
 * which nothing else ever shows again.
 */
export async function issueApiKey(
  db: DB,
  request: { orgId: string; label: string | null; scopes: ApiScope[]; expiresOn: string | null },
  actor: Actor,
): Promise<{ apiKey: ApiKeyRecord; key: string }> {
  const today = formatParisDate(new Date());
  if (request.expiresOn !== null && request.expiresOn < today) throw new ExpiryInThePast(request.expiresOn, today);
  const key = generateApiKey();
  const apiKey = await db.transaction().execute(async (trx) => {
    const created = await createApiKey(trx, {
      orgId: request.orgId,
      keyHash: hashApiKey(key),
      keyPrefix: displayPrefix(key),
      label: request.label,
      scopes: request.scopes,
      expiresAt: request.expiresOn,
    });
    await recordChange(trx, actor, {
      orgId: request.orgId,
      action: 'createApiKey',
      target: { kind: 'api_key', id: created.id },
      details: { label: request.label, scopes: request.scopes, expires_on: request.expiresOn },
    });
    return created;
  });
  return { apiKey, key };
}

/**
 * Revokes an organisation's key and records it in the audit log, in one transaction; null when the
 * organisation has no such key. Revoking twice keeps the first date (`revokedNow` false).
 */
export async function revokeOrganisationKey(db: DB, orgId: string, keyId: string, actor: Actor) {
  return auditedChange(
    db,
    actor,
    { orgId, action: 'revokeApiKey', target: { kind: 'api_key', id: keyId } },
    (trx) => revokeApiKey(trx, keyId, orgId),
    (revoked) => ({ label: revoked.key.label, already_revoked: !revoked.revokedNow }),
  );
}
