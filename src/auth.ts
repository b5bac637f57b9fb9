import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { countRequest } from '../db/api-keys';
import type { DB } from '../db/connection';
import { formatParisLongDate } from '../db/paris-time';
import type { ApiScope } from '../db/tables';
import { apiKeyPrefix, hashApiKey } from './api-keys';
import { apiErrorOf, replyWithApiError } from './error-handler';
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

function tooManyRequests(retryAfterSeconds: number, rateLimit: RateLimit): ApiError {
  return new ApiError(
    'rate_limited',
    `Trop de requêtes : la limite est de ${rateLimit.limit} requêtes par période de ${rateLimit.windowSeconds} secondes. Réessayez dans ${retryAfterSeconds} s.`,
    { retry_after: retryAfterSeconds },
    { 'Retry-After': retryAfterSeconds, ...rateLimitHeaders(rateLimit, 0, retryAfterSeconds) },
  );
}

/** What counting a request decided: refused with this error, or admitted as this caller with its budget's headers. */
type Admission = { refusal: ApiError } | { caller: Caller; headers: Record<string, string | number> };

/**
 * A key this process has admitted before, as its last verdict left it: who it is, the places left
 * in its budget, and its requests being answered ahead of their verdict. (Revocation and expiry
 * are checked by every verdict; a request answered ahead is refused when its own says so.)
 */
interface KnownKey {
  caller: Caller;
  expiresAt: Date | null;
  remaining: number;
  answeringAhead: number;
}

/** Keys remembered at most (the first admitted goes first): a server sees a few keys, not thousands. */
const knownKeysKept = 10_000;

/**
 * Settles once this turn of the event loop is over (setImmediate), when a read answered ahead has
 * sent its own statements: its count goes out after them. Sent first, it left between the page's
 * COPY and its count (perf trace of 1,000-row pages), and on 2 cores its backend took a core while
 * this process still had the page's count to send.
 */
const afterThisTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Reads change nothing: they are the only requests answered ahead of their verdict. */
const methodsAnsweredAhead = new Set(['GET']);
/** The `format` values of the files a read may stream (the other answers are whole before they are sent). */
const exportFormats = new Set(['csv', 'xlsx']);

/**
 * The key and the rate limit of every API route: the `onRequest` hook (`authenticate`) identifies
 * the key and counts the request in the key's window (shared through the database by every server
 * process), and a request is refused with 401 or 429 before anything else is answered, so that
 * nothing about the API leaks to a caller without a valid key. Calls without a usable key are
 * counted per client address, which keeps key guessing slow.
 *
 * A read with a key this process already admitted does not wait for its count: the handler
 * prepares the answer while the statement runs (sent after the handler's own: afterThisTurn), and
 * the `onSend` hook (`awaitAdmission`) holds every answer of such a request, error or not, until
 * the verdict, which may replace it with the refusal. The count is the same exact one; only its
 * round trip leaves the request's path. The work done ahead for a request that is then refused is
 * bounded: a key is answered ahead only within the places its last verdict left, so a key over its
 * budget waits for its verdict as any other.
 */
export function createAuthenticator(
  db: DB,
  rateLimit: RateLimit,
  requiredScopes: Map<string, string[]>,
  onRefusal: (bucket: 'key' | 'address') => void = () => undefined,
  onAnsweredAhead: (outcome: 'admitted' | 'refused' | 'failed') => void = () => undefined,
) {
  const findKeyAndCountRequest = createRequestCounter(db, rateLimit.limit, rateLimit.windowSeconds);
  const knownKeys = new Map<string, KnownKey>();
  const admissionsAwaited = new WeakMap<FastifyRequest, Promise<Admission>>();

  /** A call without a usable key: refused with its own error, or with a 429 once its address used up its budget. */
  async function refusalOf(request: FastifyRequest, error: ApiError): Promise<ApiError> {
    const attempts = await countRequest(db, `address:${request.ip}`, rateLimit.limit, rateLimit.windowSeconds);
    if (attempts.granted === 0) {
      onRefusal('address');
      return tooManyRequests(attempts.resetSeconds, rateLimit);
    }
    return error;
  }

  /** The verdict on a counted request, remembered for the key's next requests. */
  async function admissionOf(request: FastifyRequest, keyHash: string, key: CountedKey | null): Promise<Admission> {
    if (key === null || key.revoked || key.expired) {
      knownKeys.delete(keyHash);
      return { refusal: await refusalOf(request, unusableKeyError(key)) };
    }
    const verdict = key.verdict!;
    const caller = { keyId: key.id, orgId: key.orgId, orgName: key.orgName, scopes: key.scopes };
    const known = knownKeys.get(keyHash);
    if (known) {
      known.caller = caller;
      known.remaining = verdict.remaining;
    } else {
      if (knownKeys.size >= knownKeysKept) knownKeys.delete(knownKeys.keys().next().value!);
      knownKeys.set(keyHash, { caller, expiresAt: key.expiresAt, remaining: verdict.remaining, answeringAhead: 0 });
    }
    if (!verdict.accepted) {
      onRefusal('key');
      return { refusal: tooManyRequests(verdict.resetSeconds, rateLimit) };
    }
    return { caller, headers: rateLimitHeaders(rateLimit, verdict.remaining, verdict.resetSeconds) };
  }

  /**
   * Whether this request may be answered while it is counted: a read, with a key admitted before
   * and places left. Not an export: its COPY holds a connection until the file is sent, and exports
   * waiting for verdicts could hold every connection of the pool while the statements that give the
   * verdicts wait for one (an export lasts seconds: one round trip is nothing to it).
   */
  function mayAnswerAhead(request: FastifyRequest, known: KnownKey | undefined): known is KnownKey {
    return (
      known !== undefined &&
      methodsAnsweredAhead.has(request.method) &&
      !exportFormats.has(String((request.query as { format?: unknown }).format)) &&
      (known.expiresAt === null || known.expiresAt.getTime() > Date.now()) &&
      known.answeringAhead < known.remaining
    );
  }

  async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (!header) throw await refusalOf(request, new ApiError('key_missing'));
    const token = bearerPattern.exec(header)?.[1];
    if (!token?.startsWith(apiKeyPrefix)) {
      throw await refusalOf(
        request,
        new ApiError('key_invalid', `Clé API invalide : le format attendu est « Authorization: Bearer ${apiKeyPrefix}… ».`),
      );
    }
    const keyHash = hashApiKey(token);
    const keyHashText = keyHash.toString('base64');
    const known = knownKeys.get(keyHashText);
    const answeringAhead = mayAnswerAhead(request, known);
    const countAndAdmit = () => findKeyAndCountRequest(keyHash, keyHashText).then((key) => admissionOf(request, keyHashText, key));
    if (answeringAhead) {
      known.answeringAhead += 1;
      const settled = afterThisTurn()
        .then(countAndAdmit)
        .finally(() => {
          known.answeringAhead -= 1;
        });
      settled.then(
        (outcome) => onAnsweredAhead('refusal' in outcome ? 'refused' : 'admitted'),
        // The database did not answer: awaitAdmission answers the 503.
        () => onAnsweredAhead('failed'),
      );
      admissionsAwaited.set(request, settled);
      request.caller = known.caller;
    } else {
      const outcome = await countAndAdmit();
      if ('refusal' in outcome) throw outcome.refusal;
      reply.headers(outcome.headers);
      request.caller = outcome.caller;
    }
    // Scopes are checked here too, before validation: a read key learns nothing from a 400.
    assertScopes(request.caller, requiredScopes.get(`${request.method} ${request.routeOptions.url}`) ?? []);
  }

  /**
   * The first `onSend` hook of the API: an answer prepared ahead of its verdict leaves only once
   * the request is admitted, with its budget's headers; refused, it is dropped, its headers with it,
   * for the refusal. Every answer of the request waits, not only the first: the deadline's 503 may
   * pass here before the handler's answer does (src/app.ts, superviseRequests).
   */
  async function awaitAdmission(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const awaited = admissionsAwaited.get(request);
    if (awaited === undefined) return payload;
    let outcome: Admission;
    try {
      outcome = await awaited;
    } catch (error) {
      outcome = { refusal: apiErrorOf(error as FastifyError, request) };
    }
    if (!('refusal' in outcome)) {
      reply.headers(outcome.headers);
      return payload;
    }
    for (const name of Object.keys(reply.getHeaders())) if (name !== 'x-request-id') reply.removeHeader(name);
    return JSON.stringify(replyWithApiError(reply, outcome.refusal));
  }

  return { authenticate, awaitAdmission };
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
