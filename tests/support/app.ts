import type { FastifyInstance } from 'fastify';
import type { DB } from '../../db/connection';
import { type Config, loadConfig } from '../../src/config';
import type { AppContext } from '../../src/context';
import { type AppOptions, buildApp } from '../../src/http/app';
import { createMetrics } from '../../src/http/metrics';
import { createRenderPool } from '../../src/pdf/render-pool';

export function testConfig(overrides: Partial<Config> = {}): Config {
  return Object.freeze({ ...loadConfig({ LOG_LEVEL: 'silent', DEMO: '0' }), ...overrides });
}

/** The application's context on a test database; its render pool closes with the app. */
export function testContext(db: DB, overrides: Partial<Config> = {}): AppContext {
  return { config: testConfig(overrides), db, renderPool: createRenderPool(), metrics: createMetrics(db) };
}

/** The real server (validation, auth, rate limit, handlers) on a test database, for fastify.inject. */
export async function buildTestApp(db: DB, overrides: Partial<Config> = {}, options: AppOptions = {}): Promise<FastifyInstance> {
  const context = testContext(db, overrides);
  const app = await buildApp(context, options);
  app.addHook('onClose', async () => context.renderPool.close());
  await app.ready();
  return app;
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
