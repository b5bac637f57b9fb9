import { parseArgs } from 'node:util';
import type { paths } from '../codegen/openapi';
import { createPartnerClient, type PartnerClient } from './client';

/**
 * Incremental sync of one resource: pages through `updated_since` with the largest page, waits when
 * the rate-limit budget is spent (`X-RateLimit-Remaining`, `RateLimit` reset) and obeys
 * `Retry-After` on a 429. Usage:
 *
 *   npx tsx examples/sync.ts --base http://127.0.0.1:3000/v1 --key sk_live_… --resource logins \
 *     --since 2026-01-01 [--year 2026] > logins.jsonl
 */
type ListPath = Exclude<
  { [P in keyof paths]: paths[P] extends { get: unknown } ? P : never }[keyof paths],
  '/summary' | '/activity-report' | '/{resource}'
>;

const sleep = (seconds: number) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** Seconds until a place frees, from the IETF `RateLimit` field (`"…";r=0;t=12`). */
function resetSeconds(response: Response): number {
  const match = /;t=(\d+)/.exec(response.headers.get('ratelimit') ?? '');
  return match ? Number(match[1]) : 60;
}

export interface SyncOptions {
  resource: ListPath;
  since: string;
  year?: number;
  pageSize?: number;
  /** Called with each page's rows, in order. */
  onRows(rows: Record<string, unknown>[]): void | Promise<void>;
  /** Called when the sync waits for the rate limit (seconds). */
  onWait?(seconds: number, reason: string): void;
}

export async function syncResource(client: PartnerClient, options: SyncOptions): Promise<{ rows: number; pages: number; waited: number }> {
  const limit = options.pageSize ?? 1000;
  let offset = 0;
  let rows = 0;
  let pages = 0;
  let waited = 0;
  for (;;) {
    const query = { updated_since: options.since, limit, offset, ...(options.year ? { year: options.year } : {}) };
    const result = await client.GET(options.resource, { params: { query } } as never);
    const { data, error } = result as { data?: unknown; error?: unknown };
    const response: Response = result.response;
    if (response.status === 429) {
      const seconds = Number(response.headers.get('retry-after') ?? 1);
      options.onWait?.(seconds, '429');
      waited += seconds;
      await sleep(seconds);
      continue;
    }
    if (error || !data) throw new Error(`${options.resource} : ${response.status} ${JSON.stringify(error)}`);
    const page = data as { data: Record<string, unknown>[]; pagination: { has_more: boolean; count: number } };
    await options.onRows(page.data);
    rows += page.pagination.count;
    pages += 1;
    if (!page.pagination.has_more) return { rows, pages, waited };
    offset += page.pagination.count;
    // Budget spent: wait for a place to free rather than collect a 429.
    if (Number(response.headers.get('x-ratelimit-remaining')) === 0) {
      const seconds = resetSeconds(response);
      options.onWait?.(seconds, 'budget');
      waited += seconds;
      await sleep(seconds);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      base: { type: 'string', default: 'http://127.0.0.1:3000/v1' },
      key: { type: 'string' },
      resource: { type: 'string', default: 'users' },
      since: { type: 'string' },
      year: { type: 'string' },
    },
  });
  if (!values.key || !values.since) {
    process.stderr.write(
      'Usage : npx tsx examples/sync.ts --key sk_live_… --resource logins --since AAAA-MM-JJ [--year AAAA] [--base URL]\n',
    );
    process.exit(2);
  }
  const client = createPartnerClient(values.base!, values.key);
  const result = await syncResource(client, {
    resource: `/${values.resource}` as ListPath,
    since: values.since,
    year: values.year ? Number(values.year) : undefined,
    onRows: (rows) => {
      for (const row of rows) process.stdout.write(JSON.stringify(row) + '\n');
    },
    onWait: (seconds, reason) => process.stderr.write(`attente ${seconds} s (${reason})\n`),
  });
  process.stderr.write(`${result.rows} lignes en ${result.pages} pages\n`);
}
