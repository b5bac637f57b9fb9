import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DB } from '../../db/connection';
import { formatParisLongDate } from '../../db/paris-time';
import { countRequest } from '../../db/rate-limit';
import type { ApiScope } from '../../db/tables';
import { apiKeyPrefix, hashApiKey } from '../api-keys';
import type { KeyUsageOutcome } from '../key-usage';
import { ApiError } from './errors';
import { type CountedKey, createRequestCounter } from './request-counter';

/** Who is calling: set on every authenticated request before validation and handlers run. */
export interface Caller {
  keyId: string;
  orgId: string;
  orgName: string;
  scopes: ApiScope[];
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

/** The rate limit: `limit` requests per key over any `windowSeconds` (the spec's 120 per 60). */
export interface RateLimit {
  limit: number;
  windowSeconds: number;
}

const bearerPattern = /^Bearer[ ]+(\S+)\s*$/i;

/**
 * The budget as headers: the spec's X-RateLimit-* and the IETF fields (draft-ietf-httpapi-
 * ratelimit-headers): `RateLimit-Policy: "par-cle";q=120;w=60`, `RateLimit: "par-cle";r=..;t=..`.
 */
export function rateLimitHeaders(rateLimit: RateLimit, remaining: number, resetSeconds: number): Record<string, string | number> {
  return {
    'X-RateLimit-Limit': rateLimit.limit,
    'X-RateLimit-Remaining': remaining,
    'RateLimit-Policy': `"par-cle";q=${rateLimit.limit};w=${rateLimit.windowSeconds}`,
    RateLimit: `"par-cle";r=${remaining};t=${resetSeconds}`,
  };
}

/** Why a key cannot be used: unknown, revoked or expired. */
function unusableKeyError(key: CountedKey | null): ApiError {
  if (key === null) return new ApiError('key_invalid', 'Clé API invalide : aucune clé ne correspond.');
  if (key.revoked) return new ApiError('key_revoked', 'Clé API révoquée : créez une nouvelle clé depuis le tableau de bord.');
  return new ApiError(
    'key_expired',
    `Clé API expirée depuis le ${formatParisLongDate(key.expiresAt!)} : créez une nouvelle clé depuis le tableau de bord.`,
  );
}

export function tooManyRequests(retryAfterSeconds: number, rateLimit: RateLimit): ApiError {
  return new ApiError(
    'rate_limited',
    `Trop de requêtes : la limite est de ${rateLimit.limit} requêtes par période de ${rateLimit.windowSeconds} secondes. Réessayez dans ${retryAfterSeconds} s.`,
    { retry_after: retryAfterSeconds },
    { 'Retry-After': retryAfterSeconds, ...rateLimitHeaders(rateLimit, 0, retryAfterSeconds) },
  );
}

/**
 * The `onRequest` hook of every API route: it finds the key and takes the request's place in the
 * key's window (one statement, shared through the database by every server process), and refuses
 * with 401, 403 or 429 before anything else runs, so that a caller without a valid key learns
 * nothing about the API. Calls without a usable key are counted per client address, which keeps
 * key guessing slow. Only an admitted request reaches validation and its handler.
 */
export function createAuthenticator(
  db: DB,
  rateLimit: RateLimit,
  requiredScopes: Map<string, string[]>,
  onRefusal: (bucket: 'key' | 'address') => void = () => undefined,
  /** Each request of a known key, as getApiUsage counts them (src/key-usage.ts: no statement). */
  recordKeyUse: (keyId: string, outcome: KeyUsageOutcome) => void = () => undefined,
) {
  const findKeyAndCountRequest = createRequestCounter(db, rateLimit.limit, rateLimit.windowSeconds);

  /** A call without a usable key: refused with its own error, or with a 429 once its address used up its budget. */
  async function refusalOf(request: FastifyRequest, error: ApiError): Promise<ApiError> {
    const attempts = await countRequest(db, `address:${request.ip}`, rateLimit.limit, rateLimit.windowSeconds);
    if (attempts.granted === 0) {
      onRefusal('address');
      return tooManyRequests(attempts.resetSeconds, rateLimit);
    }
    return error;
  }

  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (!header) throw await refusalOf(request, new ApiError('key_missing'));
    const token = bearerPattern.exec(header)?.[1];
    if (!token?.startsWith(apiKeyPrefix)) {
      throw await refusalOf(
        request,
        new ApiError('key_invalid', `Clé API invalide : le format attendu est « Authorization: Bearer ${apiKeyPrefix}… ».`),
      );
    }
    const key = await findKeyAndCountRequest(hashApiKey(token));
    if (key === null) throw await refusalOf(request, unusableKeyError(key));
    if (key.revoked || key.expired) {
      recordKeyUse(key.id, 'refused');
      throw await refusalOf(request, unusableKeyError(key));
    }
    const verdict = key.verdict!;
    if (!verdict.accepted) {
      recordKeyUse(key.id, 'rate_limited');
      onRefusal('key');
      throw tooManyRequests(verdict.resetSeconds, rateLimit);
    }
    recordKeyUse(key.id, 'accepted');
    reply.headers(rateLimitHeaders(rateLimit, verdict.remaining, verdict.resetSeconds));
    request.caller = { keyId: key.id, orgId: key.orgId, orgName: key.orgName, scopes: key.scopes };
    // Scopes are checked here too, before validation: a read key learns nothing from a 400.
    assertScopes(request.caller, requiredScopes.get(`${request.method} ${request.routeOptions.url}`) ?? []);
  };
}

/**
 * The `bearerAuth` security handler that fastify-openapi-glue calls with the scopes the document
 * requires of the operation (`[write]` on POST /users). The authenticator has already checked
 * them; this keeps glue's contract and guards a route added outside the authenticated scope.
 */
export function createSecurityHandlers() {
  return {
    bearerAuth(request: FastifyRequest, _reply: FastifyReply, requiredScopes: string[]) {
      assertScopes(request.caller, requiredScopes);
    },
  };
}

function assertScopes(caller: Caller, requiredScopes: string[]): void {
  for (const scope of requiredScopes) {
    if (!caller.scopes.includes(scope as ApiScope)) throw new ApiError('scope_write_required');
  }
}
