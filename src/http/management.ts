import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { findOrganisation } from '../../db/organisations';
import { countRequest } from '../../db/rate-limit';
import type { Actor } from '../api-keys';
import type { AppContext } from '../context';
import { loadManagementDocument, managementText } from '../openapi-document';
import { tooManyRequests } from './auth';
import { apiErrorOf, jsonContentType, unknownAddress } from './error-handler';
import { ApiError, managementErrorBody } from './errors';
import { validationParam } from './validation';

/*
 * The management API below /manage/v1, from management.yaml as /v1 is from openapi.yaml: the
 * caller is identified and counted before anything else, then glue validates and routes to
 * handlers/management.ts. Every answer is `no-store` (keys and secrets travel in bodies) and every
 * error is `{error, code, param?}`.
 */

export const managementPrefix = '/manage/v1';

/**
 * The document's security requirements, checked against the caller the `onRequest` hook found:
 * glue admits a request when one of an operation's alternatives holds. A page session is not yet a
 * caller, so its alternatives do not hold.
 */
const callerChecks = {
  platformToken(request: FastifyRequest) {
    if (request.actor.kind !== 'platform') throw new ApiError('credentials_missing');
  },
  portalSession() {
    throw new ApiError('credentials_missing');
  },
  csrfToken() {
    throw new ApiError('credentials_missing');
  },
};
const rateLimitWindowSeconds = 60;

declare module 'fastify' {
  interface FastifyRequest {
    /** Who called the management API, as the audit log records them. */
    actor: Actor;
  }
}

/** Equal secrets, compared in constant time over their hashes (whatever their lengths). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

function sendManagementError(reply: FastifyReply, error: ApiError) {
  return reply.code(error.statusCode).headers(error.headers).type(jsonContentType).send(managementErrorBody(error));
}

/** Any error of the management scope as its answer: the catalogue's, with the parameter a validation error names. */
function managementErrorOf(error: FastifyError & { errors?: unknown[] }, request: FastifyRequest): ApiError {
  const apiError = apiErrorOf(error, request);
  const param = error.validation ? validationParam(error.validation as never) : undefined;
  return param === undefined ? apiError : new ApiError(apiError.code, apiError.message, { ...apiError.extraBody, param }, apiError.headers);
}

/** The management API and its document, its handlers given by app.ts (the one module that imports handlers/). */
export async function registerManagementApi(
  app: FastifyInstance,
  context: AppContext,
  handlers: Record<string, (request: never, reply: FastifyReply) => Promise<unknown>>,
): Promise<void> {
  const { config, db } = context;
  const document = loadManagementDocument();
  await app.register(
    async (api) => {
      api.get('/openapi.yaml', async (_request, reply) => reply.type('application/yaml; charset=utf-8').send(managementText));
      api.get('/openapi.json', async (_request, reply) => reply.type(jsonContentType).send(document));
      api.addHook('onSend', async (_request, reply, payload) => {
        reply.header('Cache-Control', 'no-store');
        return payload;
      });
      api.register(async (operations) => {
        // The caller first: nothing of a request runs, not even its validation, before it is known and counted.
        operations.addHook('onRequest', async (request) => {
          const authorization = request.headers.authorization;
          if (!authorization?.startsWith('Bearer ')) throw new ApiError('credentials_missing');
          const token = authorization.slice('Bearer '.length).trim();
          if (config.managementToken === null || !sameSecret(token, config.managementToken)) {
            const attempts = await countRequest(db, `address:${request.ip}`, config.rateLimitPerMinute, rateLimitWindowSeconds);
            if (attempts.granted === 0) {
              throw tooManyRequests(attempts.resetSeconds, { limit: config.rateLimitPerMinute, windowSeconds: rateLimitWindowSeconds });
            }
            throw new ApiError(
              'management_token_invalid',
              token.startsWith('sk_live_') ? 'Une clé d’organisation (sk_live_…) ne donne pas accès à l’API de gestion.' : undefined,
            );
          }
          const limit = config.managementTokenRateLimitPerMinute;
          const counted = await countRequest(db, 'management-token', limit, rateLimitWindowSeconds);
          if (counted.granted === 0) throw tooManyRequests(counted.resetSeconds, { limit, windowSeconds: rateLimitWindowSeconds });
          request.actor = { kind: 'platform', email: null, sessionId: null, requestId: request.id, clientAddress: request.ip };
        });
        // An organisation the caller may not see, or that does not exist, is the same 404.
        operations.addHook('preHandler', async (request) => {
          const orgId = (request.params as { org_id?: string }).org_id;
          if (orgId !== undefined && !(await findOrganisation(db, orgId))) throw new ApiError('unknown_organisation');
        });
        await operations.register(openapiGlue, {
          specification: document,
          serviceHandlers: handlers,
          securityHandlers: callerChecks,
        });
        operations.setNotFoundHandler((request, reply) => sendManagementError(reply, unknownAddress(request)));
      });
      api.setErrorHandler((error: FastifyError & { errors?: unknown[] }, request, reply) =>
        sendManagementError(reply, managementErrorOf(error, request)),
      );
    },
    { prefix: managementPrefix },
  );
}
