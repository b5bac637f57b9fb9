import { createHash, randomBytes } from 'node:crypto';
import type { DB } from '../db/connection';
import { createPortalLink, endPortalSession, endSessionReplaced, revokePortalSessions } from '../db/portal';
import { type Actor, auditedChange, recordChange } from './audit';

/*
 * The links that open the page « API et intégrations » for one administrator of one organisation.
 * A link's token and a session's cookie are 32 random bytes; only their SHA-256 is stored.
 */

/** Where a link leads, below the server's public address. */
export const redemptionPath = '/integrations/connexion';

export function newSecretToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashSecretToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export interface PortalLinkRequest {
  orgId: string;
  actorEmail: string;
  readOnly: boolean;
  sessionLifetimeSeconds: number;
}

/**
 * A single-use link for one administrator, recorded in the audit log: the one implementation
 * behind `createPortalLink` and the operator's `portal link`. `baseUrl` is the server's address as
 * the administrator's browser reaches it.
 */
export async function issuePortalLink(
  db: DB,
  request: PortalLinkRequest,
  actor: Actor,
  baseUrl: string,
): Promise<{ url: string; expiresAt: Date }> {
  const token = newSecretToken();
  const actorEmail = request.actorEmail.trim().toLowerCase();
  const link = await db.transaction().execute(async (trx) => {
    const created = await createPortalLink(trx, {
      orgId: request.orgId,
      tokenHash: hashSecretToken(token),
      actorEmail,
      readOnly: request.readOnly,
      sessionLifetimeSeconds: request.sessionLifetimeSeconds,
      createdBy: actor.kind === 'operator' ? 'operator' : 'platform',
    });
    await recordChange(trx, actor, {
      orgId: request.orgId,
      action: 'createPortalLink',
      target: { kind: 'portal_link', id: created.id },
      details: { actor_email: actorEmail, read_only: request.readOnly, session_lifetime_seconds: request.sessionLifetimeSeconds },
    });
    return created;
  });
  const url = new URL(redemptionPath, baseUrl);
  url.searchParams.set('jeton', token);
  return { url: url.toString(), expiresAt: link.expiresAt };
}

/** The administrator logs out: the session ends, recorded in the audit log. False when it had already ended. */
export async function logOutPortalSession(db: DB, session: { id: string; orgId: string }, actor: Actor): Promise<boolean> {
  const ended = await auditedChange(
    db,
    actor,
    { orgId: session.orgId, action: 'endPortalSession', target: { kind: 'portal_session', id: session.id } },
    async (trx) => ((await endPortalSession(trx, session.id, 'logout')) ? true : null),
  );
  return ended === true;
}

/**
 * Ends the organisation's live sessions, or one administrator's (the platform takes an access
 * back), recorded in the audit log. Returns how many were live.
 */
export async function revokeOrganisationSessions(db: DB, orgId: string, actorEmail: string | null, actor: Actor): Promise<number> {
  const email = actorEmail === null ? null : actorEmail.trim().toLowerCase();
  const revoked = await auditedChange(
    db,
    actor,
    { orgId, action: 'revokePortalSessions', target: null },
    (trx) => revokePortalSessions(trx, orgId, email),
    (count) => ({ actor_email: email, revoked: count }),
  );
  return revoked ?? 0;
}

/**
 * The session a browser held before it opened a new link ends, replaced, recorded in its own
 * organisation's audit log: one browser holds one session.
 */
export async function replacePreviousSession(db: DB, previousToken: string, actor: Actor): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const replaced = await endSessionReplaced(trx, hashSecretToken(previousToken));
    if (replaced)
      await recordChange(trx, actor, {
        orgId: replaced.org_id,
        action: 'endPortalSession',
        target: { kind: 'portal_session', id: replaced.id },
        details: { reason: 'replaced' },
      });
  });
}
