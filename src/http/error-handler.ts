import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConnectionPoolExhausted } from '../../db/connection';
import { isDatabaseUnavailable } from '../database-faults';
import { apiPrefix } from '../openapi-document';
import { errorDocUrl } from './error-codes-page';
import { ApiError, errorBody, serverBusy, serviceUnavailable } from './errors';
import { configuredOrigin, publicOrigin } from './public-origin';
import { frenchValidationMessage, validationParam } from './validation';

/** Fastify's own refusals (body parsing, content type, size, URL), by code, as our errors. */
const frameworkErrors: Record<string, () => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new ApiError('unsupported_media_type'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new ApiError('bad_request', 'Requête invalide : l’en-tête Content-Length ne correspond pas au corps.'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new ApiError('body_too_large', 'Corps de la requête trop volumineux (1 Mio au plus).'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new ApiError('body_missing', 'Corps de la requête vide : envoyez un objet JSON.'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => new ApiError('invalid_json'),
  FST_ERR_BAD_URL: () => new ApiError('invalid_url'),
  FST_ERR_MAX_PARAM_LENGTH: () => new ApiError('uri_too_long', 'Adresse trop longue : un segment d’adresse dépasse 100 caractères.'),
  FST_ERR_ASYNC_CONSTRAINT: () => new ApiError('internal'),
};

/** Any other 4xx Fastify gives by itself, by status (its code goes to the log). */
const frameworkStatuses: Record<number, () => ApiError> = {
  400: () => new ApiError('bad_request', 'Requête invalide : vérifiez l’adresse, les en-têtes et le corps envoyés.'),
  408: () => new ApiError('request_timeout'),
  413: () => new ApiError('body_too_large'),
  414: () => new ApiError('uri_too_long'),
  415: () => new ApiError('unsupported_media_type'),
  431: () => new ApiError('headers_too_large'),
};

export const jsonContentType = 'application/json; charset=utf-8';

export const databaseUnavailableMessage =
  'Service momentanément indisponible : la base de données ne répond pas. Réessayez dans quelques secondes.';

/** Sends the error with its status, headers and JSON body, its `doc_url` on the partner API's page of codes. */
export function sendApiError(reply: FastifyReply, error: ApiError) {
  const body = errorBody(error, errorDocUrl(publicOrigin(reply.request), apiPrefix, error.code));
  return reply.code(error.statusCode).headers(error.headers).type(jsonContentType).send(body);
}

/** What an error is to the client: our catalogue, always. */
export function apiErrorOf(error: FastifyError & { errors?: unknown[] }, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  if (error.validation) {
    const param = validationParam(error.validation as never);
    return new ApiError(
      error.validationContext === 'body' ? 'invalid_body' : 'invalid_parameter',
      frenchValidationMessage(error.validation as never, error.validationContext),
      param === undefined ? {} : { param },
    );
  }
  // fastify-openapi-glue wraps the security handler's error in its SecurityError.
  const cause = Array.isArray(error.errors) ? error.errors.find((inner) => inner instanceof ApiError) : undefined;
  if (cause) return cause as ApiError;
  if (error instanceof ConnectionPoolExhausted) {
    request.log.warn(
      { waitedMs: error.waitedMs },
      'pool de connexions à la base saturé : aucune connexion libre à temps (instance trop chargée)',
    );
    return serverBusy();
  }
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: { message: error.message, code: error.code } }, 'base de données indisponible');
    return serviceUnavailable(databaseUnavailableMessage);
  }
  const known = (error.code && frameworkErrors[error.code]) || (error.statusCode && frameworkStatuses[error.statusCode]);
  if (known) {
    request.log.info({ err: { message: error.message, code: error.code } }, 'requête refusée par le framework');
    return known();
  }
  request.log.error({ err: error, requestId: request.id }, 'erreur interne');
  // The client gets the request id in X-Request-Id, to quote to support.
  return new ApiError('internal');
}

/**
 * The one place errors become responses: our ApiError as catalogued, validation errors as a 400
 * naming the parameter, the security handler's refusal as its ApiError, the database that does not
 * answer as a 503 with Retry-After, Fastify's own refusals in French, and anything else as a
 * generic 500 whose detail goes to the log with the request id, never to the client.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError & { errors?: unknown[] }, request: FastifyRequest, reply: FastifyReply) =>
    sendApiError(reply, apiErrorOf(error, request)),
  );
  app.setNotFoundHandler((request, reply) => sendApiError(reply, unknownAddress(request)));
}

/** The 404 of an address no route takes, naming the method and the path (not the query). */
export function unknownAddress(request: FastifyRequest): ApiError {
  return new ApiError('route_not_found', `Adresse inconnue : ${request.method} ${request.url.split('?')[0]}.`);
}

/** Fastify's `frameworkErrors` option: a bad URL or a too long path segment, before any route. */
export function frameworkErrorResponse(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  return sendApiError(reply, apiErrorOf(error, request));
}

/**
 * Fastify's `clientErrorHandler` option: what Node's HTTP parser refuses before there is a request
 * (headers too large, malformed HTTP, a request not received in time) gets the same JSON body,
 * written on the socket, which is then closed. With no request, `doc_url` is on PUBLIC_BASE_URL,
 * else relative.
 */
export function clientErrorResponder(publicBaseUrl: string | null) {
  return function clientErrorResponse(error: Error & { code?: string }, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const refusal =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large')
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new ApiError('request_timeout')
          : new ApiError('bad_request');
    const body = JSON.stringify(errorBody(refusal, errorDocUrl(configuredOrigin(publicBaseUrl), apiPrefix, refusal.code)));
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${refusal.statusCode} ${refusal.statusCode === 431 ? 'Request Header Fields Too Large' : refusal.statusCode === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
          `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}
