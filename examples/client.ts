import createClient, { type Client } from 'openapi-fetch';
import type { paths } from '../codegen/openapi';

/**
 * A typed client of the partner API, generated from openapi.yaml: every path, parameter and
 * response body is checked by TypeScript. `npm run codegen` regenerates the types.
 */
export type PartnerClient = Client<paths, 'application/json'>;

/** JSON answers (`format=csv` is a plain download: fetch it as a file). */
export function createPartnerClient(baseUrl: string, apiKey: string): PartnerClient {
  return createClient<paths, 'application/json'>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
}
