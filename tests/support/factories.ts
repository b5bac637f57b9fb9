import { sql } from 'kysely';
import { createApiKey } from '../../db/api-keys';
import type { DB } from '../../db/connection';
import { addLicences, createOrganisation } from '../../db/organisations';
import type { LicenceStatus, LicenceType, MembershipStatus } from '../../db/tables';
import { displayPrefix, generateApiKey, hashApiKey } from '../../src/api-keys';

/** Small factories for tests: an organisation with keys, learners and licences in chosen states. */
export async function createOrgWithKeys(db: DB, options: { name?: string; domains?: string[] } = {}) {
  const organisation = await createOrganisation(db, {
    name: options.name ?? 'Formations Dupont',
    allowedEmailDomains: options.domains ?? [],
  });
  const readKey = await createKey(db, organisation.id, ['read']);
  const writeKey = await createKey(db, organisation.id, ['read', 'write']);
  return { orgId: organisation.id, orgName: organisation.name, readKey: readKey.key, writeKey: writeKey.key, readKeyId: readKey.id };
}

export async function createKey(db: DB, orgId: string, scopes: ('read' | 'write')[], expiresAt: string | null = null) {
  const key = generateApiKey();
  const row = await createApiKey(db, { orgId, keyHash: hashApiKey(key), keyPrefix: displayPrefix(key), label: 'test', scopes, expiresAt });
  return { key, id: row.id };
}

export interface LearnerSpec {
  email: string;
  name?: string | null;
  status?: MembershipStatus;
  /** Paris date-time 'YYYY-MM-DD HH:MM' of the membership date. */
  at?: string;
  licence?: { type: LicenceType; status: Exclude<LicenceStatus, 'disponible'> } | null;
}

export async function addLearner(db: DB, orgId: string, spec: LearnerSpec) {
  const at = sql<Date>`(${spec.at ?? '2026-03-01 10:00'}::timestamp at time zone 'Europe/Paris')`;
  const account = await db
    .insertInto('accounts')
    .values({ email: spec.email.toLowerCase(), name: spec.name === undefined ? 'Camille Martin' : spec.name })
    .onConflict((c) => c.column('email').doUpdateSet({ email: (eb) => eb.ref('excluded.email') }))
    .returning('id')
    .executeTakeFirstOrThrow();
  const status = spec.status ?? 'actif';
  const membership = await db
    .insertInto('memberships')
    .values({
      org_id: orgId,
      account_id: account.id,
      status,
      invited_at: status === 'invité' ? (at as never) : null,
      joined_at: status === 'invité' ? null : (at as never),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  if (spec.licence) {
    await db
      .insertInto('licences')
      .values({
        org_id: orgId,
        type: spec.licence.type,
        status: spec.licence.status,
        membership_id: membership.id,
        assigned_at: at as never,
      })
      .execute();
  }
  return { userId: account.id, membershipId: membership.id };
}

export { addLicences };
