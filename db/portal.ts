import { sql } from 'kysely';
import { type DB, type PreparedStatement, runPrepared } from './connection';
import { type CountedRequests, type CountedRow, countedRequests, takeFromBucket } from './rate-limit';

/*
 * The page's links and sessions. A link is handed to one administrator, opens at most one session
 * within its 10 minutes, and only the SHA-256 of its token is stored; a session is found by the
 * SHA-256 of its cookie's value. Expiry is the database's clock, read by every statement here.
 */

/** How long a link may wait before it is opened. */
export const linkLifetimeSeconds = 10 * 60;

export interface NewPortalLink {
  orgId: string;
  tokenHash: Buffer;
  actorEmail: string;
  readOnly: boolean;
  sessionLifetimeSeconds: number;
  createdBy: 'platform' | 'operator';
}

/** Stores a link (its token's hash); returns its id and when it stops opening. */
export async function createPortalLink(db: DB, link: NewPortalLink): Promise<{ id: string; expiresAt: Date }> {
  const row = await db
    .insertInto('portal_links')
    .values({
      org_id: link.orgId,
      token_hash: link.tokenHash,
      actor_email: link.actorEmail,
      read_only: link.readOnly,
      session_lifetime: `${link.sessionLifetimeSeconds} seconds`,
      created_by: link.createdBy,
      expires_at: sql<Date>`now() + make_interval(secs => ${linkLifetimeSeconds})` as never,
    })
    .returning(['id', 'expires_at'])
    .executeTakeFirstOrThrow();
  return { id: row.id, expiresAt: row.expires_at };
}

export interface OpenedSession {
  id: string;
  orgId: string;
  actorEmail: string;
  readOnly: boolean;
  expiresAt: Date;
}

/**
 * Redeems a link and opens its session, in one statement: of two redemptions at once, the second
 * waits for the first's row lock, then finds the link redeemed and opens nothing. Null when the
 * link is unknown, already used or past its 10 minutes (`whyNotRedeemed` tells which).
 */
export async function redeemPortalLink(db: DB, linkTokenHash: Buffer, sessionTokenHash: Buffer): Promise<OpenedSession | null> {
  const { rows } = await sql<{ id: string; org_id: string; actor_email: string; read_only: boolean; expires_at: Date }>`
    with redeemed as (
      update portal_links set redeemed_at = now()
      where token_hash = ${linkTokenHash} and redeemed_at is null and expires_at > now()
      returning id, org_id, actor_email, read_only, session_lifetime
    )
    insert into portal_sessions (org_id, link_id, token_hash, actor_email, read_only, expires_at)
    select org_id, id, ${sessionTokenHash}, actor_email, read_only, now() + session_lifetime from redeemed
    returning id, org_id, actor_email, read_only, expires_at`.execute(db);
  const row = rows[0];
  return row ? { id: row.id, orgId: row.org_id, actorEmail: row.actor_email, readOnly: row.read_only, expiresAt: row.expires_at } : null;
}

/** Why a link opened nothing: unknown, already used, or past its 10 minutes. */
export async function whyNotRedeemed(db: DB, linkTokenHash: Buffer): Promise<'unknown' | 'used' | 'expired'> {
  const link = await db
    .selectFrom('portal_links')
    .select([sql<boolean>`redeemed_at is not null`.as('used')])
    .where('token_hash', '=', linkTokenHash)
    .executeTakeFirst();
  if (!link) return 'unknown';
  return link.used ? 'used' : 'expired';
}

export interface SessionLookup {
  id: string;
  orgId: string;
  orgName: string;
  actorEmail: string;
  readOnly: boolean;
  expiresAt: Date;
  /** Live: neither ended nor past its lifetime. */
  usable: boolean;
  /** The request counted in the session's bucket; null when the session is not usable (nothing counted). */
  counted: CountedRequests | null;
}

/**
 * Finds a session by its cookie's hash ($1) and, when it is live, counts one request against its
 * budget of $2 per $3 seconds: one round trip for both, as for a key.
 */
const sessionAndCountStatement: PreparedStatement = {
  name: 'portal_session_request',
  text: `
  with found as (
    select s.id, s.org_id, o.name as org_name, s.actor_email, s.read_only, s.expires_at,
           s.ended_at is null and s.expires_at > now() as usable
    from portal_sessions s join organisations o on o.id = s.org_id
    where s.token_hash = $1
  ), counted as (${takeFromBucket(`select 'session:' || found.id as bucket from found where found.usable`, {
    requests: '1',
    limit: '$2::int',
    windowSeconds: '$3::int',
  })})
  select found.*, counted.granted, counted.in_window, counted.reset_seconds
  from found left join counted on true`,
};

export async function findSessionAndCountRequest(
  db: DB,
  tokenHash: Buffer,
  limit: number,
  windowSeconds: number,
): Promise<SessionLookup | null> {
  const [row] = await runPrepared<{
    id: string;
    org_id: string;
    org_name: string;
    actor_email: string;
    read_only: boolean;
    expires_at: Date;
    usable: boolean;
    granted: number | null;
    in_window: number | null;
    reset_seconds: number | null;
  }>(db, sessionAndCountStatement, [tokenHash, limit, windowSeconds]);
  if (!row) return null;
  return {
    id: row.id,
    orgId: row.org_id,
    orgName: row.org_name,
    actorEmail: row.actor_email,
    readOnly: row.read_only,
    expiresAt: row.expires_at,
    usable: row.usable,
    counted: row.granted === null ? null : countedRequests(row as CountedRow),
  };
}

/** Ends the live session a cookie's value names, replaced by a newer link's; its id and organisation, or null when none was live. */
export async function endSessionReplaced(db: DB, tokenHash: Buffer): Promise<{ id: string; org_id: string } | null> {
  return (
    (await db
      .updateTable('portal_sessions')
      .set({ ended_at: sql<Date>`now()` as never, end_reason: 'replaced' })
      .where('token_hash', '=', tokenHash)
      .where('ended_at', 'is', null)
      .returning(['id', 'org_id'])
      .executeTakeFirst()) ?? null
  );
}

/** Ends a live session (a logout, or a session replaced by a newer link's); false when it was not live. */
export async function endPortalSession(db: DB, sessionId: string, reason: 'logout' | 'replaced'): Promise<boolean> {
  const ended = await db
    .updateTable('portal_sessions')
    .set({ ended_at: sql<Date>`now()` as never, end_reason: reason })
    .where('id', '=', sessionId)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  return ended.numUpdatedRows > 0n;
}

/** Ends the organisation's live sessions, or one administrator's: returns how many were live. */
export async function revokePortalSessions(db: DB, orgId: string, actorEmail: string | null): Promise<number> {
  const ended = await db
    .updateTable('portal_sessions')
    .set({ ended_at: sql<Date>`now()` as never, end_reason: 'revoked' })
    .where('org_id', '=', orgId)
    .where('ended_at', 'is', null)
    .$if(actorEmail !== null, (query) => query.where('actor_email', '=', actorEmail!))
    .executeTakeFirst();
  return Number(ended.numUpdatedRows);
}
