import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
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

/**
 * An error body in the one shape: its French sentence (text or matcher), a code of the catalogue
 * (`code` when the test names it), where that code is explained, and whatever else it has
 * (`param`, `available`, `retry_after`). The contract tests check the exact keys.
 */
export function anErrorBody(error: unknown, code?: string, more: Record<string, unknown> = {}) {
  return expect.objectContaining({
    error,
    code: code ?? expect.stringMatching(/^[a-z_]+$/),
    doc_url: expect.stringMatching(/\/docs\/errors#[a-z_]+$/),
    ...more,
  });
}
