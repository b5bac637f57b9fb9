import Fastify from 'fastify';
import pg from 'pg';

/**
 * The framework-and-driver limit for `make bench`: bare Fastify + pg running the same SQL as
 * GET /users (count and page, compiled from the same Kysely query), with no key, rate limit,
 * validation or envelope logic. Started as its own process by users.bench.ts.
 */
const { DATABASE_URL, PORT, COUNT_SQL, COUNT_PARAMS, PAGE_SQL, PARAMS } = process.env;
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 20 });
const params = JSON.parse(PARAMS!) as unknown[];
const countParams = JSON.parse(COUNT_PARAMS!) as unknown[];
const app = Fastify();
app.get('/users', async (request) => {
  const { limit = '100', offset = '0' } = request.query as Record<string, string>;
  const [counted, page] = await Promise.all([
    pool.query(COUNT_SQL!, countParams),
    pool.query(PAGE_SQL!, [...params, Number(limit), Number(offset)]),
  ]);
  return { resource: 'users', pagination: { total: counted.rows[0].n, count: page.rows.length }, data: page.rows };
});
await app.listen({ port: Number(PORT), host: '127.0.0.1' });
process.stdout.write(`bare server ready on ${PORT}\n`);
