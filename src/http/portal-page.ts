import type { FastifyInstance, FastifyReply } from 'fastify';
import { recordAuditEvent } from '../../db/audit';
import { endPortalSession, redeemPortalLink, whyNotRedeemed } from '../../db/portal';
import { countRequest } from '../../db/rate-limit';
import type { AppContext } from '../context';
import { hashSecretToken, newSecretToken, redemptionPath } from '../portal';
import { sessionCookieName } from './management';

/*
 * The page's door: a link's token opens a session, whose cookie then carries the page's calls to
 * the management API. A link opens once, within its 10 minutes; what it cannot open is said on a
 * plain French page with no script. The token never reaches the log (the logger masks `jeton`).
 */

const pageSecurityHeaders = {
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy': "default-src 'none'; style-src 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
};

const refusals = {
  unknown: { status: 404, message: 'Lien inconnu. Rouvrez « API et intégrations » depuis votre tableau de bord.' },
  used: {
    status: 410,
    message: 'Ce lien a déjà servi : chaque lien ne s’ouvre qu’une fois. Rouvrez « API et intégrations » depuis votre tableau de bord.',
  },
  expired: {
    status: 410,
    message: 'Ce lien a expiré : il doit être ouvert dans les 10 minutes. Rouvrez « API et intégrations » depuis votre tableau de bord.',
  },
} as const;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

function refusalPage(reply: FastifyReply, status: number, message: string) {
  const html = `<!doctype html>
<html lang="fr"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API et intégrations</title></head>
<body><main><h1>API et intégrations</h1><p>${escapeHtml(message)}</p></main></body></html>
`;
  return reply.code(status).headers(pageSecurityHeaders).type('text/html; charset=utf-8').send(html);
}

export function registerPortalDoor(app: FastifyInstance, context: AppContext): void {
  const { db, config } = context;
  app.get(redemptionPath, async (request, reply) => {
    const attempts = await countRequest(db, `address:${request.ip}`, config.rateLimitPerMinute, 60);
    if (attempts.granted === 0) {
      return refusalPage(reply, 429, `Trop de tentatives : réessayez dans ${attempts.resetSeconds} s.`).header(
        'Retry-After',
        attempts.resetSeconds,
      );
    }
    const token = (request.query as { jeton?: unknown }).jeton;
    if (typeof token !== 'string' || token === '') return refusalPage(reply, refusals.unknown.status, refusals.unknown.message);
    const linkHash = hashSecretToken(token);
    const sessionToken = newSecretToken();
    const session = await redeemPortalLink(db, linkHash, hashSecretToken(sessionToken));
    if (session === null) {
      const refusal = refusals[await whyNotRedeemed(db, linkHash)];
      return refusalPage(reply, refusal.status, refusal.message);
    }
    await recordAuditEvent(db, {
      orgId: session.orgId,
      actor: { kind: 'session', email: session.actorEmail, sessionId: session.id },
      action: 'openPortalSession',
      target: { kind: 'portal_session', id: session.id },
      outcome: 'succeeded',
      details: { read_only: session.readOnly },
      requestId: request.id,
      clientAddress: request.ip,
    });
    const cookieName = sessionCookieName(request);
    const previous = request.cookies[cookieName];
    if (previous) await endPreviousSession(context, previous);
    const maxAge = Math.max(1, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000));
    return reply
      .headers(pageSecurityHeaders)
      .setCookie(cookieName, sessionToken, {
        path: '/',
        httpOnly: true,
        sameSite: 'strict',
        secure: request.protocol === 'https',
        maxAge,
      })
      .redirect('/integrations/', 302);
  });
}

/** The session a browser held before a new link: replaced, so that one browser holds one session. */
async function endPreviousSession(context: AppContext, previousToken: string): Promise<void> {
  const previous = await context.db
    .selectFrom('portal_sessions')
    .select('id')
    .where('token_hash', '=', hashSecretToken(previousToken))
    .executeTakeFirst();
  if (previous) await endPortalSession(context.db, previous.id, 'replaced');
}
