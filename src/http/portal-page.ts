import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { redeemPortalLink, whyNotRedeemed } from '../../db/portal';
import { countRequest } from '../../db/rate-limit';
import { type Actor, recordChange } from '../audit';
import type { AppContext } from '../context';
import { projectFolder } from '../openapi-document';
import { hashSecretToken, newSecretToken, redemptionPath, replacePreviousSession } from '../portal';
import { escapeHtml } from './html';
import { sessionCookieName, sessionCookieOptions } from './management';

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

function refusalPage(reply: FastifyReply, status: number, message: string) {
  const html = `<!doctype html>
<html lang="fr"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API et intégrations</title></head>
<body><main><h1>API et intégrations</h1><p>${escapeHtml(message)}</p></main></body></html>
`;
  return reply.code(status).headers(pageSecurityHeaders).type('text/html; charset=utf-8').send(html);
}

/**
 * The page's own headers: its script and style from this server only, no inline script, calls to
 * this server only, and framed only by PORTAL_FRAME_ANCESTORS (by nobody without it).
 */
function pageHeaders(frameAncestors: readonly string[]) {
  const ancestors = frameAncestors.length > 0 ? frameAncestors.join(' ') : "'none'";
  return {
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': `default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors ${ancestors}`,
    ...(frameAncestors.length > 0 ? {} : { 'X-Frame-Options': 'DENY' }),
  };
}

/** The page's files: its HTML and style as written (page/), its script as `npm start` bundles it (dist/page.js). */
const pageFiles = {
  '/integrations/': { file: path.join(projectFolder, 'page', 'index.html'), type: 'text/html; charset=utf-8' },
  '/integrations/page.css': { file: path.join(projectFolder, 'page', 'page.css'), type: 'text/css; charset=utf-8' },
  '/integrations/page.js': { file: path.join(projectFolder, 'dist', 'page.js'), type: 'text/javascript; charset=utf-8' },
} as const;

/** The page « API et intégrations »: three static files, whose script calls the management API. */
export function registerPortalPage(app: FastifyInstance, context: AppContext): void {
  const headers = pageHeaders(context.config.portalFrameAncestors);
  for (const [route, { file, type }] of Object.entries(pageFiles)) {
    app.get(route, async (_request, reply) =>
      reply
        .headers(headers)
        .type(type)
        .send(await readFile(file)),
    );
  }
  app.get('/integrations', async (_request, reply) => reply.redirect('/integrations/', 301));
}

export function registerPortalDoor(app: FastifyInstance, context: AppContext): void {
  const { db, config } = context;
  app.get(redemptionPath, async (request, reply) => {
    const attempts = await countRequest(db, `address:${request.ip}`, config.rateLimitPerMinute, config.rateLimitWindowSeconds);
    if (attempts.granted === 0) {
      reply.header('Retry-After', attempts.resetSeconds);
      return refusalPage(reply, 429, `Trop de tentatives : réessayez dans ${attempts.resetSeconds} s.`);
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
    const actor: Actor = {
      kind: 'session',
      email: session.actorEmail,
      sessionId: session.id,
      requestId: request.id,
      clientAddress: request.ip,
    };
    await recordChange(db, actor, {
      orgId: session.orgId,
      action: 'openPortalSession',
      target: { kind: 'portal_session', id: session.id },
      details: { read_only: session.readOnly },
    });
    const cookieName = sessionCookieName(request);
    const previous = request.cookies[cookieName];
    if (previous) await replacePreviousSession(db, previous, actor);
    const maxAge = Math.max(1, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000));
    return reply
      .headers(pageSecurityHeaders)
      .setCookie(cookieName, sessionToken, { ...sessionCookieOptions(request), maxAge })
      .redirect('/integrations/', 302);
  });
}
