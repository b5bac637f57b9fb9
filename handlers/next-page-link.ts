import type { FastifyRequest } from 'fastify';

/**
 * The RFC 8288 `Link` to the next page: the request's own path and parameters with the next
 * `offset`, so a client can follow it without rebuilding the query.
 */
export function nextPageLink(request: FastifyRequest, nextOffset: number): string {
  const url = new URL(request.url, 'http://placeholder');
  url.searchParams.set('offset', String(nextOffset));
  return `<${url.pathname}${url.search}>; rel="next"`;
}
