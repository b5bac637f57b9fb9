import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { recordAuditEvent } from '../../db/audit';
import { findOrganisation } from '../../db/organisations';
import { findSessionAndCountRequest, type SessionLookup } from '../../db/portal';
import { countRequest } from '../../db/rate-limit';
import type { Actor } from '../audit';
import type { AppContext } from '../context';
import { loadManagementDocument, managementText, operationsByRoute } from '../openapi-document';
import { hashSecretToken } from '../portal';
import { isUuid } from '../uuid';
import { tooManyRequests } from './auth';
import { errorDocUrl, registerErrorCodesPage } from './error-codes-page';
import { apiErrorOf, jsonContentType, unknownAddress } from './error-handler';
import { ApiError, managementErrorBody } from './errors';
import { publicOrigin } from './public-origin';

/*
 * The management API below /manage/v1, from management.yaml as /v1 is from openapi.yaml: the
 * caller is identified and counted before anything else, then glue validates and routes to
 * handlers/management.ts. Every answer is `no-store` (keys and secrets travel in bodies) and every
 * error is `{error, code, param?}`.
 */

export const managementPrefix = '/manage/v1';

/** A page session's anti-CSRF token: derived from its cookie's value, which only the browser and this request hold. */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('csrf').digest('base64url');
}

/** Whether browsers reach the page over https: as PUBLIC_BASE_URL says, else as the request came. */
function pageOverHttps(request: FastifyRequest): boolean {
  return publicOrigin(request)?.startsWith('https://') ?? false;
}

/** The session cookie's name: `__Host-` (which requires Secure) over https, plain over local http. */
export function sessionCookieName(request: FastifyRequest): string {
  return pageOverHttps(request) ? '__Host-portail_session' : 'portail_session';
}

/** The session cookie's attributes, the same to set it and to clear it (a browser keeps a cookie cleared with others). */
export function sessionCookieOptions(request: FastifyRequest) {
  return { path: '/', httpOnly: true, sameSite: 'strict' as const, secure: pageOverHttps(request) };
}

/** The refusals of a session's attempted change that the audit log records. */
const auditedRefusals = new Set(['session_read_only', 'csrf_rejected', 'platform_only']);

/** What a refused change was aimed at, from its path. */
function refusedTarget(params: { key_id?: string; endpoint_id?: string; delivery_id?: string }) {
  if (params.key_id) return { kind: 'api_key' as const, id: params.key_id };
  if (params.endpoint_id) return { kind: 'webhook_endpoint' as const, id: params.endpoint_id };
  if (params.delivery_id) return { kind: 'webhook_delivery' as const, id: params.delivery_id };
  return null;
}

/** Codes that only say which kind of caller an operation takes: any other refusal is more precise. */
const callerKindCodes = new Set(['platform_only', 'session_only']);

/**
 * The document's security requirements, checked against the caller the `onRequest` hook found:
 * glue admits a request when one of an operation's alternatives holds.
 */
function callerChecks() {
  return {
    platformToken(request: FastifyRequest) {
      if (request.actor.kind !== 'platform') throw new ApiError('platform_only');
    },
    portalSession(request: FastifyRequest, _reply: FastifyReply, roles: string[]) {
      if (request.actor.kind !== 'session' || !request.portalSession) throw new ApiError('session_only');
      if (roles.includes('write') && request.portalSession.readOnly) throw new ApiError('session_read_only');
    },
    csrfToken(request: FastifyRequest) {
      const session = request.portalSession;
      if (request.actor.kind !== 'session' || !session) throw new ApiError('session_only');
      const fetchSite = request.headers['sec-fetch-site'];
      const token = request.headers['x-csrf-token'];
      const origin = publicOrigin(request);
      const sameOrigin = origin !== null && request.headers.origin === origin && (fetchSite === undefined || fetchSite === 'same-origin');
      if (!sameOrigin || typeof token !== 'string' || !sameSecret(token, csrfTokenOf(session.token))) throw new ApiError('csrf_rejected');
    },
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who called the management API, as the audit log records them. */
    actor: Actor;
    /** The page session that called, with its cookie's value (for its anti-CSRF token). */
    portalSession?: Omit<SessionLookup, 'usable' | 'counted'> & { token: string };
  }
}

/** Equal secrets, compared in constant time over their hashes (whatever their lengths). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

function sendManagementError(reply: FastifyReply, error: ApiError) {
  const body = managementErrorBody(error, errorDocUrl(publicOrigin(reply.request), managementPrefix, error.code));
  return reply.code(error.statusCode).headers(error.headers).type(jsonContentType).send(body);
}

/** Any error of the management scope as its answer: the most precise of the security checks' refusals, else the catalogue's. */
function managementErrorOf(error: FastifyError & { errors?: unknown[] }, request: FastifyRequest): ApiError {
  const refusals = Array.isArray(error.errors) ? error.errors.filter((inner): inner is ApiError => inner instanceof ApiError) : [];
  return refusals.find((refusal) => !callerKindCodes.has(refusal.code)) ?? apiErrorOf(error, request);
}

/** The management API and its document, its handlers given by app.ts (the one module that imports handlers/). */
export async function registerManagementApi(
  app: FastifyInstance,
  context: AppContext,
  handlers: Record<string, (request: never, reply: FastifyReply) => Promise<unknown>>,
): Promise<void> {
  const { config, db } = context;
  const document = loadManagementDocument();
  registerErrorCodesPage(app, document, managementPrefix);
  await app.register(
    async (api) => {
      api.get('/openapi.yaml', async (_request, reply) => reply.type('application/yaml; charset=utf-8').send(managementText));
      api.get('/openapi.json', async (_request, reply) => reply.type(jsonContentType).send(document));
      // The docs page, with no credential, as /v1's: its own swagger instance, beside /v1's.
      await api.register(async (docs) => {
        await docs.register(swagger, { mode: 'static', specification: { document: document as never } });
        await docs.register(swaggerUi, { routePrefix: '/docs' });
      });
      api.addHook('onSend', async (_request, reply, payload) => {
        reply.header('Cache-Control', 'no-store');
        return payload;
      });
      api.register(async (operations) => {
        // The caller first: nothing of a request runs, not even its validation, before it is known and counted.
        operations.addHook('onRequest', async (request) => {
          const authorization = request.headers.authorization;
          const sessionToken = request.cookies[sessionCookieName(request)];
          if (!authorization?.startsWith('Bearer ') && sessionToken) {
            const limit = config.managementRateLimitPerMinute;
            const session = await findSessionAndCountRequest(db, hashSecretToken(sessionToken), limit, config.rateLimitWindowSeconds);
            if (!session?.usable || !session.counted) throw new ApiError('session_expired');
            if (session.counted.granted === 0)
              throw tooManyRequests(session.counted.resetSeconds, { limit, windowSeconds: config.rateLimitWindowSeconds });
            request.portalSession = {
              id: session.id,
              orgId: session.orgId,
              orgName: session.orgName,
              actorEmail: session.actorEmail,
              readOnly: session.readOnly,
              expiresAt: session.expiresAt,
              token: sessionToken,
            };
            request.actor = {
              kind: 'session',
              email: session.actorEmail,
              sessionId: session.id,
              requestId: request.id,
              clientAddress: request.ip,
            };
            return;
          }
          if (!authorization?.startsWith('Bearer ')) throw new ApiError('credentials_missing');
          const token = authorization.slice('Bearer '.length).trim();
          if (config.managementToken === null || !sameSecret(token, config.managementToken)) {
            const attempts = await countRequest(db, `address:${request.ip}`, config.rateLimitPerMinute, config.rateLimitWindowSeconds);
            if (attempts.granted === 0) {
              throw tooManyRequests(attempts.resetSeconds, {
                limit: config.rateLimitPerMinute,
                windowSeconds: config.rateLimitWindowSeconds,
              });
            }
            throw new ApiError(
              'management_token_invalid',
              token.startsWith('sk_live_') ? 'Une clé d’organisation (sk_live_…) ne donne pas accès à l’API de gestion.' : undefined,
            );
          }
          const limit = config.managementTokenRateLimitPerMinute;
          const counted = await countRequest(db, 'management-token', limit, config.rateLimitWindowSeconds);
          if (counted.granted === 0) throw tooManyRequests(counted.resetSeconds, { limit, windowSeconds: config.rateLimitWindowSeconds });
          request.actor = { kind: 'platform', email: null, sessionId: null, requestId: request.id, clientAddress: request.ip };
        });
        // An organisation the caller may not see, or that does not exist, is the same 404, before
        // the request is validated: a probe learns nothing from another organisation's paths.
        operations.addHook('preValidation', async (request) => {
          const orgId = (request.params as { org_id?: string }).org_id;
          // Not an id at all: the validation's 400 names the parameter.
          if (orgId === undefined || !isUuid(orgId)) return;
          // A session sees its own organisation only; any other is as unknown as one that does not exist.
          const visible = request.portalSession ? request.portalSession.orgId === orgId : Boolean(await findOrganisation(db, orgId));
          if (!visible) throw new ApiError('unknown_organisation');
        });
        await operations.register(openapiGlue, {
          specification: document,
          serviceHandlers: handlers,
          securityHandlers: callerChecks(),
        });
        operations.setNotFoundHandler((request, reply) => sendManagementError(reply, unknownAddress(request)));
      });
      const operationsByItsRoute = operationsByRoute(document, managementPrefix);
      api.setErrorHandler(async (error: FastifyError & { errors?: unknown[] }, request, reply) => {
        const refusal = managementErrorOf(error, request);
        // A change a session tried and was refused is in the audit log, as its changes are.
        if (request.portalSession && auditedRefusals.has(refusal.code)) {
          const params = request.params as { key_id?: string; endpoint_id?: string; delivery_id?: string };
          await recordAuditEvent(db, {
            orgId: request.portalSession.orgId,
            actor: request.actor,
            action:
              operationsByItsRoute.get(`${request.method} ${request.routeOptions.url}`)?.operationId ??
              `${request.method} ${request.routeOptions.url}`,
            target: refusedTarget(params),
            outcome: 'refused',
            refusalCode: refusal.code,
            requestId: request.id,
            clientAddress: request.ip,
          });
        }
        return sendManagementError(reply, refusal);
      });
    },
    { prefix: managementPrefix },
  );
}
