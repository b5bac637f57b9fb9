import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

// `meta.generated_at` changes every minute whatever the data: it is left out of the validator.
const generatedAtField = '"generated_at":"';

/**
 * A weak validator of a JSON body: the same data gives the same ETag. It hashes the encoded bytes
 * around `generated_at` (no copy of the text without it: that cost more than the hash), then
 * `rows` when the body stands without them (a page's envelope, and its rows' digest: pageEtag).
 */
export function jsonEtag(body: Buffer, rows?: Uint8Array): string {
  const hash = createHash('sha256');
  const start = body.indexOf(generatedAtField);
  if (start === -1) {
    hash.update(body);
  } else {
    const end = body.indexOf('"', start + generatedAtField.length) + 1;
    hash.update(body.subarray(0, start)).update(body.subarray(end));
  }
  if (rows !== undefined) hash.update(rows);
  return `W/"${hash.digest('base64url').slice(0, 27)}"`;
}

/** The digest that stands for the rows of a page past the cap, which has none. */
export const noRowsDigest: Uint8Array = createHash('sha256').digest();

/**
 * The ETag of a page: its envelope without the rows (and without `generated_at`), and the SHA-256
 * of its rows' COPY bytes, which stand for the rows' JSON: the same rows, the same digest. The bytes
 * read are hashed as they arrive (db/connection.ts copyOutWhole), before the JSON is written.
 */
export function pageEtag(envelope: string, rows: Uint8Array): string {
  return jsonEtag(Buffer.from(envelope), rows);
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
  // A page comes as bytes (handlers/list-resource.ts); other answers are encoded once, here: the
  // hash reads these bytes and the response sends them.
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  // A page comes with its ETag (pageEtag); any other answer's is its body's.
  const etag = (reply.getHeader('etag') as string | undefined) ?? jsonEtag(body);
  reply.header('ETag', etag);
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch && matches(ifNoneMatch, etag)) {
    reply.code(304);
    reply.removeHeader('content-type');
    return '';
  }
  return body;
}
