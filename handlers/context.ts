import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../src/config';
import type { RenderPool } from '../src/pdf/render-pool';
import type { DB } from '../db/connection';

/** What every handler may use: passed in once, so handlers stay testable and free of globals. */
export interface HandlerContext {
  readonly db: DB;
  readonly config: Config;
  readonly renderPool: RenderPool;
}

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
