import type { FastifyInstance } from 'fastify';
import type { DB } from '../../db/connection';
import { type Config, loadConfig } from '../../src/config';
import type { AppContext } from '../../src/context';
import { type AppOptions, buildApp } from '../../src/http/app';
import { createMetrics } from '../../src/http/metrics';
import { createKeyUsageTally } from '../../src/key-usage';
import { createRenderPool } from '../../src/pdf/render-pool';

export function testConfig(overrides: Partial<Config> = {}): Config {
  return Object.freeze({ ...loadConfig({ LOG_LEVEL: 'silent', DEMO: '0' }), ...overrides });
}

/** The application's context on a test database; its render pool and its key usage tally close with the app. */
export function testContext(db: DB, overrides: Partial<Config> = {}): AppContext {
  const config = testConfig(overrides);
  return {
    config,
    db,
    renderPool: createRenderPool(),
    metrics: createMetrics(db),
    keyUsage: createKeyUsageTally(db, config.keyUsageFlushMs),
  };
}

/** The real server (validation, auth, rate limit, handlers) on a test database, for fastify.inject. */
export async function buildTestApp(db: DB, overrides: Partial<Config> = {}, options: AppOptions = {}): Promise<FastifyInstance> {
  const context = testContext(db, overrides);
  const app = await buildApp(context, options);
  app.addHook('onClose', async () => {
    // A test whose database is gone by now (or never answered) has nothing to count.
    await context.keyUsage.close().catch(() => undefined);
    await context.renderPool.close();
  });
  await app.ready();
  return app;
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
