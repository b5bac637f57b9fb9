import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

// `meta.generated_at` changes every minute whatever the data: it is left out of the validator.
const generatedAtField = '"generated_at":"';

/** A weak validator of a JSON body: the same data gives the same ETag. It hashes the bytes around `generated_at`. */
export function jsonEtag(body: Buffer): string {
  const hash = createHash('sha256');
  const start = body.indexOf(generatedAtField);
  if (start === -1) {
    hash.update(body);
  } else {
    const end = body.indexOf('"', start + generatedAtField.length) + 1;
    hash.update(body.subarray(0, start)).update(body.subarray(end));
  }
  return `W/"${hash.digest('base64url').slice(0, 27)}"`;
}

function matches(ifNoneMatch: string, etag: string): boolean {
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((candidate) => candidate.trim() === '*' || opaque(candidate) === opaque(etag));
}

/**
 * The `onSend` hook that makes polling cheap for ETL: every successful JSON GET carries an ETag,
 * and `If-None-Match` with the current one gets 304 with no body. (The request was already counted
 * by the rate limit: a 304 saves bandwidth and parsing, not budget.)
 */
export async function conditionalJson(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (request.method !== 'GET' || reply.statusCode !== 200) return payload;
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
  if (!String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return payload;
  // Encoded once, here: the hash reads these bytes and the response sends them.
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const etag = jsonEtag(body);
  reply.header('ETag', etag);
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch && matches(ifNoneMatch, etag)) {
    reply.code(304);
    reply.removeHeader('content-type');
    return '';
  }
  return body;
}
