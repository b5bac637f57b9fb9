import { parseArgs } from 'node:util';
import type { paths } from '../codegen/openapi';
import { createPartnerClient, type PartnerClient } from './client';

/**
 * Incremental sync of one resource: pages through `updated_since` with the largest page, waits when
 * the rate-limit budget is spent (`X-RateLimit-Remaining`, `RateLimit` reset) and obeys
 * `Retry-After` on a 429. Usage (`--help` for the whole of it):
 *
 *   npx tsx examples/sync.ts --base http://127.0.0.1:3000/v1 --key sk_live_… --resource logins \
 *     --since 2026-01-01 [--year 2026] > logins.jsonl
 */
/** The paths whose JSON answer is a page of rows: the list resources, as the generated types know them. */
type ListPath = {
  [P in keyof paths]: paths[P] extends { get: { responses: { 200: { content: { 'application/json': { pagination: unknown } } } } } }
    ? P
    : never;
}[keyof paths];

/** The server answered with an error (its French message), not with a page. */
export class SyncRefusedError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The list resources of the API at `base`, in its document's order, as the server describes them
 * (`GET /openapi.json`): every path whose JSON answer is a page of rows. Read when the sync runs, so
 * that a resource the API adds is synced without a new version of this program.
 */
export async function listResourcesOf(base: string): Promise<string[]> {
  const response = await fetch(`${base}/openapi.json`);
  if (!response.ok) throw new SyncRefusedError(response.status, `GET ${base}/openapi.json : ${response.status}`);
  const document = (await response.json()) as { paths: Record<string, { get?: any }> };
  const resolve = (schema: any): any =>
    typeof schema?.$ref === 'string'
      ? resolve(
          schema.$ref
            .split('/')
            .slice(1)
            .reduce((node: any, key: string) => node?.[key], document),
        )
      : schema;
  return Object.entries(document.paths).flatMap(([route, item]) => {
    const page = resolve(item.get?.responses?.['200']?.content?.['application/json']?.schema);
    return page?.properties?.pagination && page.properties.data ? [route.slice(1)] : [];
  });
}

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
    if (error || !data) {
      const message = (error as { error?: unknown } | undefined)?.error;
      throw new SyncRefusedError(response.status, typeof message === 'string' ? message : `GET ${options.resource} : ${response.status}`);
    }
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

const usage = `Synchronisation incrémentale d'une ressource de l'API partenaires, une ligne JSON par ligne de données.

Usage : npx tsx examples/sync.ts --base URL --key CLÉ --since AAAA-MM-JJ [--resource NOM] [--year AAAA] > lignes.jsonl

  --base URL          racine de l'API (par défaut http://127.0.0.1:3000/v1)
  --key CLÉ           clé d'API de l'organisation (sk_live_…)
  --since AAAA-MM-JJ  date naturelle de départ, incluse (updated_since)
  --resource NOM      ressource à synchroniser (par défaut users) : l'une des listes que l'API décrit
                      dans son document (GET /openapi.json), par exemple logins
  --year AAAA         année civile (par défaut l'année en cours)
  --help              affiche cette aide
`;

/** A command line that cannot be run; its message is French, for the person who typed it. */
class UsageError extends Error {}

/** What the command line asked, or the French sentence that says why it cannot be run. */
function readCommandLine(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      base: { type: 'string', default: 'http://127.0.0.1:3000/v1' },
      key: { type: 'string' },
      resource: { type: 'string', default: 'users' },
      since: { type: 'string' },
      year: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return { help: true as const };
  if (!/^https?:\/\/[^/]/.test(values.base))
    throw new UsageError('--base attend une adresse http:// ou https://, par exemple http://127.0.0.1:3000/v1.');
  if (!values.key) throw new UsageError('indiquez la clé d’API avec --key.');
  if (!values.since || !/^\d{4}-\d{2}-\d{2}$/.test(values.since))
    throw new UsageError('indiquez la date de départ avec --since AAAA-MM-JJ.');
  if (values.year !== undefined && !/^\d{4}$/.test(values.year)) throw new UsageError('--year attend une année sur quatre chiffres.');
  return {
    help: false as const,
    base: values.base,
    key: values.key,
    resource: values.resource,
    since: values.since,
    year: values.year,
  };
}

const networkFailures: Record<string, string> = {
  ECONNREFUSED: 'connexion refusée',
  ECONNRESET: 'connexion interrompue',
  ENOTFOUND: 'nom d’hôte introuvable',
  EAI_AGAIN: 'nom d’hôte introuvable',
  ETIMEDOUT: 'délai de connexion dépassé',
  UND_ERR_CONNECT_TIMEOUT: 'délai de connexion dépassé',
  EHOSTUNREACH: 'hôte inaccessible',
};

const plural = (count: number, word: string) => `${count} ${word}${count > 1 ? 's' : ''}`;

/** One French sentence for what stopped the sync: the server out of reach, or its own refusal. */
function explain(error: unknown, base: string): string {
  if (error instanceof SyncRefusedError) return `Le serveur a refusé la requête (${error.status}) : ${error.message}`;
  const code = (error as { cause?: { code?: string } })?.cause?.code;
  if (error instanceof TypeError && code)
    return `Serveur injoignable à ${base} (${networkFailures[code] ?? `erreur réseau ${code}`}) : vérifiez l’adresse donnée par --base et que l’API est démarrée.`;
  return `Synchronisation interrompue : ${error instanceof Error ? error.message : String(error)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let commandLine: ReturnType<typeof readCommandLine>;
  try {
    commandLine = readCommandLine(process.argv.slice(2));
  } catch (error) {
    // parseArgs speaks English (unknown option, missing value): the option is named in French instead.
    const option = /'(-[^' ]+)/.exec((error as Error).message)?.[1];
    const reason =
      error instanceof UsageError ? error.message : `option non reconnue ou incomplète : ${option ?? (error as Error).message}.`;
    process.stderr.write(`Erreur : ${reason}\n\n${usage}`);
    process.exit(2);
  }
  if (commandLine.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  try {
    const resources = await listResourcesOf(commandLine.base);
    if (!resources.includes(commandLine.resource)) {
      process.stderr.write(
        `Erreur : ressource inconnue : ${commandLine.resource} (ressources de l’API : ${resources.join(', ')}).\n\n${usage}`,
      );
      process.exit(2);
    }
    const result = await syncResource(createPartnerClient(commandLine.base, commandLine.key), {
      // One of the API's list paths, as its document has just said.
      resource: `/${commandLine.resource}` as ListPath,
      since: commandLine.since,
      year: commandLine.year ? Number(commandLine.year) : undefined,
      onRows: (rows) => {
        for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
      },
      onWait: (seconds, reason) =>
        process.stderr.write(`attente de ${seconds} s (${reason === '429' ? 'requête refusée : 429' : 'budget de requêtes épuisé'})\n`),
    });
    process.stderr.write(`${plural(result.rows, 'ligne')} en ${plural(result.pages, 'page')}\n`);
  } catch (error) {
    process.stderr.write(`${explain(error, commandLine.base)}\n`);
    process.exit(1);
  }
}
