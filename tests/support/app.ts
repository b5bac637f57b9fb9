import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app';
import { type Config, loadConfig } from '../../src/config';
import type { DB } from '../../db/connection';

export function testConfig(overrides: Partial<Config> = {}): Config {
  return Object.freeze({ ...loadConfig({ LOG_LEVEL: 'silent', DEMO: '0' }), ...overrides });
}

/** The real server (validation, auth, rate limit, handlers) on a test database, for fastify.inject. */
export async function buildTestApp(db: DB, overrides: Partial<Config> = {}): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig(overrides), db });
  await app.ready();
  return app;
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
