import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { createHandlers } from '../handlers';
import { createAuthenticator, createSecurityHandlers } from './auth';
import { conditionalJson } from './conditional-requests';
import type { Config } from './config';
import type { DB } from './database';
import { installErrorHandler } from './error-handler';
import { ApiError } from './errors';
import { declaredMethodsByPath, loadOpenapiDocument, openapiText, requiredScopesByRoute } from './openapi-document';
import { validatorCompiler } from './validation';

export const apiPrefix = '/v1';

export interface AppDependencies {
  config: Config;
  db: DB;
  /** Where logs go (stdout by default); tests capture them. */
  logStream?: { write(line: string): void };
}

/**
 * The whole server, in the order a request meets it: logging, errors, the public document and
 * docs, then the API itself (key and rate limit, routes and validation from openapi.yaml, the
 * handlers), and the 405 answers for methods a path does not declare.
 */
export async function buildApp({ config, db, logStream }: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[masqué]' },
      ...(logStream ? { stream: logStream } : {}),
    },
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    trustProxy: false,
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  app.setValidatorCompiler(validatorCompiler);
  // Responses are plain JSON.stringify: a schema-driven serializer would coerce or drop values and
  // hide a handler's mistake instead of letting the contract tests see it.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  installErrorHandler(app);

  const document = loadOpenapiDocument();

  // The document and its docs page need no key.
  app.get(`${apiPrefix}/openapi.yaml`, async (_request, reply) => reply.type('application/yaml; charset=utf-8').send(openapiText));
  app.get(`${apiPrefix}/openapi.json`, async (_request, reply) => reply.type('application/json; charset=utf-8').send(document));
  // The docs page's "Try it out" calls the server that serves it, whatever its host and port.
  const docsDocument = { ...structuredClone(document), servers: [{ url: apiPrefix, description: 'ce serveur' }, ...(document.servers ?? [])] };
  await app.register(swagger, { mode: 'static', specification: { document: docsDocument as never } });
  await app.register(swaggerUi, { routePrefix: `${apiPrefix}/docs` });

  const handlers = createHandlers({ db, config });
  await app.register(async (api) => {
    api.addHook('onRequest', createAuthenticator(db, { limit: config.rateLimitPerMinute, windowSeconds: config.rateLimitWindowSeconds }, requiredScopesByRoute(document, apiPrefix)));
    api.addHook('onSend', conditionalJson);
    // Types the document names only for responses: a request body of that type is refused (415).
    api.addContentTypeParser(['application/pdf', 'text/csv'], (_request, _body, done) =>
      done(Object.assign(new Error('type de contenu non pris en charge'), { statusCode: 415 }), undefined));
    await api.register(openapiGlue, {
      specification: structuredClone(document),
      serviceHandlers: handlers,
      securityHandlers: createSecurityHandlers(),
      prefix: apiPrefix,
    });
  });

  // Methods a path does not declare: 405 with Allow, whatever the key (it reveals nothing).
  const allMethods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
  for (const [route, declared] of declaredMethodsByPath(document)) {
    const allowed = declared.includes('GET') ? [...declared, 'HEAD'] : declared;
    app.route({
      method: allMethods.filter((method) => !allowed.includes(method)),
      url: `${apiPrefix}${route}`,
      handler: async () => {
        throw new ApiError('method_not_allowed', `Méthode non autorisée : cette adresse accepte ${declared.join(', ')}.`, {}, { Allow: allowed.join(', ') });
      },
    });
  }
  return app;
}
