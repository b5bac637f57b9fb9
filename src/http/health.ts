import type { FastifyInstance } from 'fastify';
import type { DB } from '../../db/connection';
import { createDatabaseProbe } from '../../db/health';
import { sendApiError } from './error-handler';
import { serviceUnavailable } from './errors';
import type { Metrics } from './metrics';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route for operators and load balancers (health, metrics): no key, no rate limit, not counted. */
    operational?: boolean;
  }
}

/** How long readiness waits for the database before it says no. */
const readinessProbeMs = 1000;

/**
 * The routes of the people who run the server, outside the API (no key, no rate limit, logged at
 * debug level): `/livez` (the process answers), `/readyz` (it can serve: the database answers on
 * the probe's own connection, and it is not stopping; otherwise 503, so a load balancer sends
 * requests elsewhere; a busy server is still ready) and `/metrics` (Prometheus). The two probes
 * answer HEAD too (the same status and headers, no body): some load balancers probe with it.
 */
export function registerHealthRoutes(app: FastifyInstance, parts: { db: DB; isDraining: () => boolean; metrics: Metrics }): void {
  const config = { operational: true };
  const database = createDatabaseProbe(parts.db, readinessProbeMs);
  app.addHook('onClose', () => database.close());
  const probe = ['GET', 'HEAD'];
  app.route({ method: probe, url: '/livez', config, handler: async () => ({ statut: 'en vie' }) });
  app.route({
    method: probe,
    url: '/readyz',
    config,
    handler: async (_request, reply) => {
      if (parts.isDraining()) return sendApiError(reply, serviceUnavailable('Pas prêt : le serveur s’arrête.'));
      if (!(await database.answers())) return sendApiError(reply, serviceUnavailable('Pas prêt : la base de données ne répond pas.'));
      return { statut: 'prêt' };
    },
  });
  app.get('/metrics', { config }, async (_request, reply) =>
    reply.type(parts.metrics.registry.contentType).send(await parts.metrics.registry.metrics()),
  );
}
