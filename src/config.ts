import { envSchema } from 'env-schema';

/** Every setting of the server and the operator commands, validated once at start. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** null: the project starts its own embedded PostgreSQL under `dataDir`. */
  readonly databaseUrl: string | null;
  readonly dataDir: string;
  readonly embeddedPostgresPort: number;
  readonly demo: boolean;
  readonly aggregationCap: number;
  readonly rateLimitPerMinute: number;
  /** The rate limit's window (the spec's 60 s; shorter only to test it). */
  readonly rateLimitWindowSeconds: number;
  readonly logLevel: string;
  /** Longest wait for a database connection (then 503). */
  readonly databaseConnectTimeoutMs: number;
  /** Longest a statement may run, on the server and as seen from here (then 503). */
  readonly databaseQueryTimeoutMs: number;
  /** Longest a request may wait for its answer to start (then 503). */
  readonly requestTimeoutMs: number;
  /** Longest a stopping server waits for the requests in flight before closing their connections. */
  readonly shutdownTimeoutMs: number;
  /**
   * The proxies whose X-Forwarded-For is believed (load balancers): their addresses or networks,
   * or how many hops; false when clients connect directly. The client address limits calls
   * without a valid key.
   */
  readonly trustProxy: string | number | false;
  readonly webhookRetryDelaysSeconds: readonly number[];
  readonly webhookTimeoutMs: number;
  readonly webhookDisableAfter: number;
  readonly webhookAllowInsecure: boolean;
  /** The platform's bearer token for the management API (any organisation); null: that caller is off. */
  readonly managementToken: string | null;
  /**
   * The address administrators' browsers reach this server at (`https://api.exemple.fr`), for the
   * links and the origin that the page's changes must come from; null: the request's own address.
   */
  readonly publicBaseUrl: string | null;
  /**
   * The origins allowed to frame the page « API et intégrations » (the platform's dashboard), as the
   * CSP's `frame-ancestors` lists them; empty: the page cannot be framed.
   */
  readonly portalFrameAncestors: readonly string[];
  /** Management calls per page session over the rate limit's window. */
  readonly managementRateLimitPerMinute: number;
  /** Management calls with the platform's token over the rate limit's window. */
  readonly managementTokenRateLimitPerMinute: number;
  /** How often the requests counted per key and per day are written to the database. */
  readonly keyUsageFlushMs: number;
}

interface RawEnvironment {
  PORT: number;
  HOST: string;
  DATABASE_URL?: string;
  DATA_DIR: string;
  EMBEDDED_PG_PORT: number;
  DEMO: string;
  AGGREGATION_CAP: number;
  RATE_LIMIT_PER_MINUTE: number;
  RATE_LIMIT_WINDOW_SECONDS: number;
  LOG_LEVEL: string;
  DB_CONNECT_TIMEOUT_MS: number;
  DB_QUERY_TIMEOUT_MS: number;
  REQUEST_TIMEOUT_MS: number;
  SHUTDOWN_TIMEOUT_MS: number;
  TRUST_PROXY: string;
  WEBHOOK_RETRY_DELAYS: string;
  WEBHOOK_TIMEOUT_MS: number;
  WEBHOOK_DISABLE_AFTER: number;
  WEBHOOK_ALLOW_INSECURE: string;
  MANAGEMENT_TOKEN?: string;
  PUBLIC_BASE_URL?: string;
  PORTAL_FRAME_ANCESTORS?: string;
  MANAGEMENT_RATE_LIMIT_PER_MINUTE: number;
  MANAGEMENT_TOKEN_RATE_LIMIT_PER_MINUTE: number;
  KEY_USAGE_FLUSH_MS: number;
}

const environmentSchema = {
  type: 'object',
  properties: {
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    DATABASE_URL: { type: 'string', pattern: '^postgres(ql)?://', description: 'doit être une adresse postgres:// ou postgresql://' },
    DATA_DIR: { type: 'string', minLength: 1, default: '.data' },
    EMBEDDED_PG_PORT: { type: 'integer', minimum: 1, maximum: 65535, default: 54329 },
    DEMO: { type: 'string', enum: ['0', '1'], default: '1' },
    AGGREGATION_CAP: { type: 'integer', minimum: 1, default: 100000 },
    RATE_LIMIT_PER_MINUTE: { type: 'integer', minimum: 1, default: 120 },
    RATE_LIMIT_WINDOW_SECONDS: { type: 'integer', minimum: 1, maximum: 3600, default: 60 },
    LOG_LEVEL: { type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' },
    DB_CONNECT_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 600000, default: 3000 },
    DB_QUERY_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 3600000, default: 5000 },
    REQUEST_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 3600000, default: 15000 },
    SHUTDOWN_TIMEOUT_MS: { type: 'integer', minimum: 0, maximum: 600000, default: 10000 },
    TRUST_PROXY: {
      type: 'string',
      pattern: '^(|\\d{1,2}|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*)$',
      description: 'doit donner des adresses ou réseaux séparés par des virgules (10.0.0.0/8,192.168.1.10), ou un nombre de relais (1)',
      default: '',
    },
    WEBHOOK_RETRY_DELAYS: {
      type: 'string',
      pattern: '^\\d+(\\.\\d+)?(,\\d+(\\.\\d+)?)*$',
      description: 'doit donner des durées en secondes séparées par des virgules (60,600,3600)',
      default: '60,600,3600,21600,86400',
    },
    WEBHOOK_TIMEOUT_MS: { type: 'integer', minimum: 1, default: 10000 },
    WEBHOOK_DISABLE_AFTER: { type: 'integer', minimum: 1, default: 50 },
    WEBHOOK_ALLOW_INSECURE: { type: 'string', enum: ['0', '1'], default: '0' },
    MANAGEMENT_TOKEN: {
      type: 'string',
      pattern: '^[\\x21-\\x7e]{32,512}$',
      description: 'doit compter de 32 à 512 caractères visibles, sans espace (openssl rand -base64 48)',
    },
    PUBLIC_BASE_URL: {
      type: 'string',
      pattern: '^https?://[^\\s/?#@]+$',
      description: 'doit être une adresse http:// ou https:// sans chemin (https://api.exemple.fr)',
    },
    PORTAL_FRAME_ANCESTORS: {
      type: 'string',
      pattern: '^https://[^\\s/?#@,]+( https://[^\\s/?#@,]+)*$',
      description: 'doit lister des origines https séparées par une espace (https://tableau-de-bord.exemple.fr)',
    },
    MANAGEMENT_RATE_LIMIT_PER_MINUTE: { type: 'integer', minimum: 1, default: 120 },
    MANAGEMENT_TOKEN_RATE_LIMIT_PER_MINUTE: { type: 'integer', minimum: 1, default: 600 },
    KEY_USAGE_FLUSH_MS: { type: 'integer', minimum: 10, maximum: 600000, default: 10000 },
  },
} as const;

type SettingName = keyof typeof environmentSchema.properties;
type SettingRule = { type: string; enum?: readonly string[]; minimum?: number; maximum?: number; minLength?: number; description?: string };

/** What a setting accepts, said in French from its rule: `doit être un nombre entier de 0 à 65535`. */
function expectation(rule: SettingRule): string {
  if (rule.enum) return `doit valoir ${rule.enum.slice(0, -1).join(', ')} ou ${rule.enum.at(-1)}`;
  if (rule.type === 'integer') {
    if (rule.minimum !== undefined && rule.maximum !== undefined) return `doit être un nombre entier de ${rule.minimum} à ${rule.maximum}`;
    return rule.minimum !== undefined ? `doit être un nombre entier d’au moins ${rule.minimum}` : 'doit être un nombre entier';
  }
  // A pattern's meaning, written next to it in the schema.
  return rule.description ?? 'ne doit pas être vide';
}

/** Settings whose value is never repeated in a refusal: a database address may carry a password. */
const secretSettings = new Set<SettingName>(['DATABASE_URL', 'MANAGEMENT_TOKEN']);

/**
 * Ajv's English errors (`env/PORT must be integer`) become one French sentence per setting at
 * fault, naming it, what it accepts and what it got; the values of secretSettings are not repeated.
 */
function settingErrors(errors: readonly { instancePath: string }[], environment: NodeJS.ProcessEnv): string[] {
  const names = [...new Set(errors.map((error) => error.instancePath.replace(/^\//, '') as SettingName))];
  return names.map((name) => {
    const rule = environmentSchema.properties[name] as SettingRule | undefined;
    if (!rule) return `${name} : valeur refusée.`;
    const value = environment[name] ?? '';
    const received = secretSettings.has(name) || value === '' ? '' : ` (reçu « ${value} »)`;
    return `${name} ${expectation(rule)}${received}.`;
  });
}

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  let raw: RawEnvironment;
  try {
    raw = envSchema<RawEnvironment>({ schema: environmentSchema, data: { ...environment } });
  } catch (error) {
    const errors = (error as { errors?: { instancePath: string }[] }).errors;
    if (!errors?.length) throw error;
    const sentences = settingErrors(errors, environment);
    throw new Error(
      sentences.length === 1
        ? `Configuration invalide : ${sentences[0]}`
        : `Configuration invalide :\n${sentences.map((sentence) => `  - ${sentence}`).join('\n')}`,
    );
  }
  return Object.freeze({
    port: raw.PORT,
    host: raw.HOST,
    databaseUrl: raw.DATABASE_URL ?? null,
    dataDir: raw.DATA_DIR,
    embeddedPostgresPort: raw.EMBEDDED_PG_PORT,
    demo: raw.DEMO === '1',
    aggregationCap: raw.AGGREGATION_CAP,
    rateLimitPerMinute: raw.RATE_LIMIT_PER_MINUTE,
    rateLimitWindowSeconds: raw.RATE_LIMIT_WINDOW_SECONDS,
    logLevel: raw.LOG_LEVEL,
    databaseConnectTimeoutMs: raw.DB_CONNECT_TIMEOUT_MS,
    databaseQueryTimeoutMs: raw.DB_QUERY_TIMEOUT_MS,
    requestTimeoutMs: raw.REQUEST_TIMEOUT_MS,
    shutdownTimeoutMs: raw.SHUTDOWN_TIMEOUT_MS,
    trustProxy: raw.TRUST_PROXY === '' ? false : /^\d+$/.test(raw.TRUST_PROXY) ? Number(raw.TRUST_PROXY) : raw.TRUST_PROXY,
    webhookRetryDelaysSeconds: Object.freeze(raw.WEBHOOK_RETRY_DELAYS.split(',').map(Number)),
    webhookTimeoutMs: raw.WEBHOOK_TIMEOUT_MS,
    webhookDisableAfter: raw.WEBHOOK_DISABLE_AFTER,
    webhookAllowInsecure: raw.WEBHOOK_ALLOW_INSECURE === '1',
    managementToken: raw.MANAGEMENT_TOKEN ?? null,
    publicBaseUrl: raw.PUBLIC_BASE_URL ?? null,
    portalFrameAncestors: Object.freeze(raw.PORTAL_FRAME_ANCESTORS ? raw.PORTAL_FRAME_ANCESTORS.split(' ') : []),
    managementRateLimitPerMinute: raw.MANAGEMENT_RATE_LIMIT_PER_MINUTE,
    managementTokenRateLimitPerMinute: raw.MANAGEMENT_TOKEN_RATE_LIMIT_PER_MINUTE,
    keyUsageFlushMs: raw.KEY_USAGE_FLUSH_MS,
  });
}
