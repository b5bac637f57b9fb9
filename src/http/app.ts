import { randomUUID } from 'node:crypto';
import { type IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { createHandlers } from '../../handlers';
import { createManagementHandlers } from '../../handlers/management';
import type { Config } from '../config';
import type { AppContext } from '../context';
import {
  answerOnlyMediaTypes,
  apiPrefix,
  declaredMethodsByPath,
  loadOpenapiDocument,
  openapiText,
  requiredScopesByRoute,
  routedDocument,
} from '../openapi-document';
import { createAuthenticator, createSecurityHandlers } from './auth';
import { conditionalJson } from './conditional-requests';
import { registerErrorCodesPage } from './error-codes-page';
import {
  clientErrorResponder,
  frameworkErrorResponse,
  installErrorHandler,
  jsonContentType,
  sendApiError,
  unknownAddress,
} from './error-handler';
import { ApiError, serviceUnavailable } from './errors';
import { registerHealthRoutes } from './health';
import { registerManagementApi } from './management';
import type { Metrics } from './metrics';
import { registerPortalDoor, registerPortalPage } from './portal-page';
import { validatorCompiler } from './validation';

/** Longest URL served (beyond it 414; beyond Node's 16 KiB of headers, the request line included, 431). */
const maxUrlLength = 8192;

export interface AppOptions {
  /** Where logs go (stdout by default); tests capture them. */
  logStream?: { write(line: string): void };
  /** A learner of the demo organisation: the docs page's "Try it out" of the activity report opens on them. */
  docsLearnerEmail?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The process is stopping: readiness turns false, and requests on open connections get 503. */
    startDraining(): void;
    readonly metrics: Metrics;
  }
}

/**
 * The whole HTTP server, in the order a request meets it: the request id and the limits every
 * request has (URL length, answer deadline, draining), logging and metrics, errors, the operators'
 * health and metrics routes, the public document and docs, then the API itself (key and rate limit,
 * routes and validation from openapi.yaml, the handlers), and its 404 and 405 answers. What it uses
 * for its life (database, render pool, metrics) comes in `context`: the server opens and closes it
 * (src/context.ts, `openServerContext`), and so do the tests.
 */
export async function buildApp(context: AppContext, { logStream, docsLearnerEmail }: AppOptions = {}): Promise<FastifyInstance> {
  const { config, db, metrics } = context;
  let draining = false;
  const app = createFastify(config, logStream);
  serveWhatNodeWouldRefuse(app);
  app.decorate('startDraining', () => {
    draining = true;
  });
  app.decorate('metrics', metrics);
  app.decorate('publicBaseUrl', config.publicBaseUrl);
  superviseRequests(app, config, metrics, () => draining);
  app.setValidatorCompiler(validatorCompiler);
  // Responses are plain JSON.stringify: a schema-driven serializer would coerce or drop values and
  // hide a handler's mistake instead of letting the contract tests see it.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  installErrorHandler(app);

  registerHealthRoutes(app, { db, isDraining: () => draining, metrics });

  const document = loadOpenapiDocument();
  await registerDocument(app, document, docsLearnerEmail);
  await registerApi(app, context, document);
  await app.register(cookie);
  registerPortalDoor(app, context);
  registerPortalPage(app, context);
  await registerManagementApi(app, context, createManagementHandlers({ db: context.db, config: context.config, openapi: document }));
  return app;
}

function createFastify(config: Config, logStream: AppOptions['logStream']): FastifyInstance {
  return Fastify({
    logger: {
      level: config.logLevel,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'req.headers.cookie', 'req.headers["x-csrf-token"]'],
        censor: '[masqué]',
      },
      // A portal link's token is in its URL: the log keeps the URL without it.
      serializers: {
        req: (request: { method: string; url: string; hostname?: string; ip?: string }) => ({
          method: request.method,
          url: request.url.replace(/([?&]jeton=)[^&]*/g, '$1[masqué]'),
          host: request.hostname,
          remoteAddress: request.ip,
        }),
      },
      ...(logStream ? { stream: logStream } : {}),
    },
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    // Behind load balancers, their X-Forwarded-For gives the client address (TRUST_PROXY).
    trustProxy: config.trustProxy as never, // a hop count is valid (Fastify docs), missing from its types
    // HEAD is not offered: the 405 lists what is (building a PDF or a page to throw it away helps nobody).
    exposeHeadRoutes: false,
    // Our own 503 while draining, in the one error shape.
    return503OnClosing: false,
    // The whole request must arrive within this time (a client that trickles its headers or body).
    requestTimeout: 30_000,
    frameworkErrors: frameworkErrorResponse,
    clientErrorHandler: clientErrorResponder(config.publicBaseUrl),
    // Node would answer an HTTP/1.1 request without Host with a bare 400; the `onRequest` hook
    // refuses it in the one error shape instead.
    http: { requireHostHeader: false },
    // Health probes and scrapes come every few seconds: logged at debug level (superviseRequests), not info.
    logController: new LogController({ disableRequestLogging: (request) => isOperational(request) }),
  });
}

const isOperational = (request: FastifyRequest) => request.routeOptions?.config?.operational === true;

/**
 * Requests Node answers by itself, without a word of ours, go through Fastify like any other: an
 * `Expect` other than 100-continue (Node's bare 417) is ignored, as RFC 9110 allows, and the request
 * served; a CONNECT (Node would close the connection) meets the routes, so it gets the 401, 404 or
 * 405 with `Allow` any other method gets, then the connection is closed (it was never a tunnel).
 */
function serveWhatNodeWouldRefuse(app: FastifyInstance): void {
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => app.server.emit('request', request, response));
  app.server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    // Node hands the socket over with its own listeners removed: a reset must not become an uncaught error.
    socket.on('error', () => socket.destroy());
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket as never);
    response.on('finish', () => {
      response.detachSocket(socket as never);
      socket.end();
    });
    app.server.emit('request', request, response);
  });
}

/**
 * Methods whose answer may be cut by the deadline: they change nothing, so a 503 is always true and
 * a retry always safe. A write (POST /users) is not cut: its transaction could still commit after a
 * 503 that told the client to try again; its statements are bounded by the database timeouts
 * (DB_CONNECT_TIMEOUT_MS, DB_QUERY_TIMEOUT_MS), so its answer is the real outcome, and comes.
 */
const methodsUnderDeadline = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/**
 * What every request meets on its way in: its id, the Host header HTTP/1.1 requires, the URL
 * length, the refusal while draining, and the deadline of a read's answer; on its way out, the
 * deadline cleared and the request counted (the operators' routes are not: they are logged at
 * debug level instead).
 */
function superviseRequests(app: FastifyInstance, config: Config, metrics: Metrics, isDraining: () => boolean): void {
  const deadlines = new WeakMap<FastifyRequest, NodeJS.Timeout>();
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    if (request.headers.host === undefined && request.raw.httpVersion !== '1.0')
      throw new ApiError('bad_request', 'Requête HTTP mal formée : l’en-tête Host est obligatoire en HTTP/1.1.');
    if (request.url.length > maxUrlLength) throw new ApiError('uri_too_long', `Adresse trop longue : ${maxUrlLength} caractères au plus.`);
    if (isDraining() && !isOperational(request)) {
      reply.header('Connection', 'close');
      throw serviceUnavailable('Le serveur s’arrête : réessayez dans quelques secondes (une autre instance répondra).');
    }
    if (!methodsUnderDeadline.has(request.method)) return;
    // A read whose answer has not started by the deadline is a 503: the client may try again.
    const deadline = setTimeout(() => {
      if (reply.sent || reply.raw.headersSent) return;
      request.log.warn({ deadlineMs: config.requestTimeoutMs }, 'réponse non commencée dans le délai');
      sendApiError(
        reply,
        serviceUnavailable(
          `La réponse n’a pas pu être préparée en ${config.requestTimeoutMs / 1000} s : réessayez dans quelques secondes.`,
        ),
      );
    }, config.requestTimeoutMs);
    deadline.unref();
    deadlines.set(request, deadline);
  });
  app.addHook('onResponse', async (request, reply) => {
    clearTimeout(deadlines.get(request));
    if (isOperational(request)) {
      request.log.debug({ req: request, res: reply, responseTime: reply.elapsedTime }, 'requête d’exploitation servie');
      return;
    }
    // Labels of bounded cardinality: the route's template (not its URL), the method, the status.
    const labels = { route: request.routeOptions.url ?? 'non trouvée', method: request.method, status: String(reply.statusCode) };
    metrics.requests.inc(labels);
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
  });
}

/**
 * The contract and its docs page, which need no key; `/` and `/v1` lead to the docs page (the
 * address `make run` prints is the API's base).
 */
async function registerDocument(app: FastifyInstance, document: Record<string, any>, docsLearnerEmail: string | undefined): Promise<void> {
  app.get(`${apiPrefix}/openapi.yaml`, async (_request, reply) => reply.type('application/yaml; charset=utf-8').send(openapiText));
  app.get(`${apiPrefix}/openapi.json`, async (_request, reply) => reply.type(jsonContentType).send(document));
  // In a scope of its own: the management API's docs page has another swagger instance.
  await app.register(async (docs) => {
    await docs.register(swagger, { mode: 'static', specification: { document: docsDocument(document, docsLearnerEmail) as never } });
    await docs.register(swaggerUi, { routePrefix: `${apiPrefix}/docs` });
  });
  registerErrorCodesPage(app, document, apiPrefix);
  for (const url of ['/', apiPrefix, `${apiPrefix}/`]) app.get(url, async (_request, reply) => reply.redirect(`${apiPrefix}/docs/`, 302));
}

/**
 * The operations that need a learner (`email` or `user_id`): the docs page fills in the demo
 * organisation's learner there, when the server has one.
 */
const operationsOnOneLearner = new Set(['getActivityReport']);

/** What the docs page's "Try it out" of POST /users starts from: the server refuses it (400) until edited. */
const enrolmentTemplate = {
  summary: 'Modèle à compléter (« Try it out » part de celui-ci : remplacez l’email avant « Execute »)',
  value: { email: 'à compléter', programme_slugs: [] },
};

/**
 * The document as the docs page shows it. Its "Try it out" calls the server that serves it,
 * whatever its host and port. Swagger UI fills each parameter's input with the parameter's
 * example, so the first Execute asked for a learner and a programme that do not exist in the
 * caller's organisation (404), with an `If-None-Match`: here every parameter's example moves into
 * its description, where it is still read, and the inputs open with the defaults only, so that
 * every GET answers 200 with nothing but a key. The activity report, which needs a learner, opens
 * on the demo organisation's when there is one. POST /users opens on a template the server
 * refuses, so that nobody is enrolled without an explicit edit; its examples stay in the list.
 */
function docsDocument(document: Record<string, any>, docsLearnerEmail: string | undefined): Record<string, any> {
  const docs = structuredClone(document);
  docs.servers = [{ url: apiPrefix, description: 'ce serveur' }, ...(document.servers ?? [])];
  const operations = Object.values<Record<string, any>>(docs.paths ?? {}).flatMap((pathItem) =>
    Object.values<Record<string, any>>(pathItem).filter((operation) => typeof operation === 'object' && operation.responses),
  );
  const parameters = [
    ...Object.values<Record<string, any>>(docs.components?.parameters ?? {}),
    ...Object.values<Record<string, any>>(docs.paths ?? {}).flatMap((pathItem) => pathItem.parameters ?? []),
    ...operations.flatMap((operation) => operation.parameters ?? []),
  ];
  for (const parameter of parameters) showExampleInDescription(parameter);
  if (docsLearnerEmail)
    for (const operation of operations.filter((candidate) => operationsOnOneLearner.has(candidate.operationId)))
      operation.parameters = operation.parameters.map((parameter: Record<string, any>) =>
        parameter.$ref === '#/components/parameters/email'
          ? {
              ...docs.components.parameters.email,
              description: `${docs.components.parameters.email.description}\n\nPré-rempli ici avec un apprenant de l’organisation de démonstration.`,
              example: docsLearnerEmail,
            }
          : parameter,
      );
  const enrolment = docs.paths?.['/users']?.post?.requestBody?.content?.['application/json'];
  if (enrolment?.examples) enrolment.examples = { 'a-completer': enrolmentTemplate, ...enrolment.examples };
  return docs;
}

/** Moves a parameter's `example` / `examples` (and its schema's) to the end of its description. */
function showExampleInDescription(parameter: Record<string, any>): void {
  const values = [
    parameter.example,
    ...Object.values<{ value?: unknown }>(parameter.examples ?? {}).map((example) => example.value),
    parameter.schema?.example,
    ...(parameter.schema?.examples ?? []),
  ].filter((value) => value !== undefined);
  delete parameter.example;
  delete parameter.examples;
  if (parameter.schema) {
    delete parameter.schema.example;
    delete parameter.schema.examples;
  }
  if (values.length === 0) return;
  const shown = values.map((value) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``).join(', ');
  parameter.description = `${(parameter.description ?? '').trimEnd()}\n\nExemple : ${shown}`;
}

/** The API below /v1: key and rate limit, JSON bodies only, routes and validation from the contract, the handlers, and the 404 and 405 answers. */
async function registerApi(app: FastifyInstance, context: AppContext, document: Record<string, any>): Promise<void> {
  const { config, db, metrics } = context;
  const handlers = await createHandlers({ db, config, renderPool: context.renderPool }, document);
  const declaredMethods = declaredPathMatchers(document);
  await app.register(
    async (api) => {
      // Every answer of the API, 404 and 405 included, comes after the key and the rate limit: a
      // caller without a valid key learns nothing, not even which methods a path takes.
      const authenticate = createAuthenticator(
        db,
        { limit: config.rateLimitPerMinute, windowSeconds: config.rateLimitWindowSeconds },
        requiredScopesByRoute(document, apiPrefix),
        (bucket) => metrics.rateLimitRefusals.inc({ bucket }),
        (keyId, outcome) => context.keyUsage.record(keyId, outcome),
      );
      api.addHook('onRequest', authenticate);
      api.addHook('onSend', conditionalJson);
      // Only JSON bodies are read: text, and the types the document names only for responses, are 415.
      api.removeContentTypeParser('text/plain');
      api.addContentTypeParser(answerOnlyMediaTypes(document), (_request, _body, done) =>
        done(Object.assign(new Error('unsupported content type'), { statusCode: 415 }), undefined),
      );
      // A route that takes a body gets one: without it, validation (which keys on the content type) never runs.
      api.addHook('preValidation', async (request) => {
        if (request.routeOptions.schema?.body && (request.body === undefined || request.body === null)) throw new ApiError('body_missing');
      });
      await api.register(openapiGlue, {
        specification: routedDocument(document),
        serviceHandlers: handlers,
        securityHandlers: createSecurityHandlers(),
      });
      api.setNotFoundHandler((request, reply) => notFoundOrNotAllowed(request, reply, declaredMethods));
      // Fastify reads a request's body before it finds that no route takes it: a body it cannot read
      // (malformed, too large, of another type, a QUERY without Content-Type) must not turn the 404
      // or 405 into a 400, 413 or 415. Every other error goes on to the one error handler.
      api.setErrorHandler((error: FastifyError, request, reply) => {
        if (request.is404 && isBodyReadingError(error)) return notFoundOrNotAllowed(request, reply, declaredMethods);
        throw error;
      });
    },
    { prefix: apiPrefix },
  );
}

function isBodyReadingError(error: FastifyError): boolean {
  return error.code?.startsWith('FST_ERR_CTP_') || error.code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE' || error.statusCode === 415;
}

/** The document's paths as patterns of the URL below /v1, with the methods each declares. */
function declaredPathMatchers(document: Record<string, any>): { pattern: RegExp; methods: string[] }[] {
  return [...declaredMethodsByPath(document)].map(([route, methods]) => ({
    pattern: new RegExp(
      `^${route
        .split('/')
        .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/')}$`,
    ),
    methods,
  }));
}

/** Below /v1 and authenticated: a path of the document asked with another method is 405 with Allow, any other path 404. */
function notFoundOrNotAllowed(request: FastifyRequest, reply: FastifyReply, declared: { pattern: RegExp; methods: string[] }[]) {
  const path = request.url.split('?')[0]!.slice(apiPrefix.length);
  const match = declared.find((entry) => entry.pattern.test(path));
  if (!match) return sendApiError(reply, unknownAddress(request));
  return sendApiError(
    reply,
    new ApiError(
      'method_not_allowed',
      `Méthode ${request.method} non autorisée : cette adresse accepte ${match.methods.join(', ')}.`,
      {},
      { Allow: match.methods.join(', ') },
    ),
  );
}
