import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, errorBody } from './errors';
import { frenchValidationMessage } from './validation';

/** Fastify's own 4xx (body parsing, content type, size), in French. */
const frameworkMessages: Record<number, string> = {
  400: 'Requête invalide : le corps n’est pas un JSON valide.',
  404: 'Adresse inconnue.',
  406: 'Format de réponse non disponible.',
  413: 'Corps de la requête trop volumineux.',
  415: 'Type de contenu non pris en charge : envoyez « Content-Type: application/json ».',
};

function sendApiError(reply: FastifyReply, error: ApiError) {
  return reply.code(error.statusCode).headers(error.headers).type('application/json; charset=utf-8').send(errorBody(error));
}

/**
 * The one place errors become responses: our ApiError as catalogued, validation errors as a 400
 * naming the parameter, the security handler's refusal as its ApiError, and anything else as a
 * generic 500 whose detail goes to the log with the request id, never to the client.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError & { errors?: unknown[] }, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof ApiError) return sendApiError(reply, error);
    if (error.validation) {
      return sendApiError(reply, new ApiError(
        error.validationContext === 'body' ? 'invalid_body' : 'invalid_parameter',
        frenchValidationMessage(error.validation as never, error.validationContext),
      ));
    }
    // fastify-openapi-glue wraps the security handler's error in its SecurityError.
    const cause = Array.isArray(error.errors) ? error.errors.find((inner) => inner instanceof ApiError) : undefined;
    if (cause) return sendApiError(reply, cause as ApiError);
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      request.log.info({ err: error }, 'requête refusée par le framework');
      return reply.code(status).send({ error: frameworkMessages[status] ?? 'Requête invalide.' });
    }
    request.log.error({ err: error, requestId: request.id }, 'erreur interne');
    // The client gets the request id in X-Request-Id, to quote to support.
    return sendApiError(reply, new ApiError('internal'));
  });

  app.setNotFoundHandler((request, reply) =>
    sendApiError(reply, new ApiError('route_not_found', `Adresse inconnue : ${request.method} ${request.url.split('?')[0]}.`)));
}
