import { describe, expect, it } from 'vitest';
import { errorCodes, errorStatus } from '../src/http/errors';
import { loadManagementDocument, loadOpenapiDocument } from '../src/openapi-document';

// Every code the server can answer is declared, with its description, in the document of each API
// that can answer it; each error response of openapi.yaml names the codes it carries, with the
// status the server gives them.

/** The codes only /v1 answers: its key, its scope, its resources and its enrolments. */
const partnerOnlyCodes = [
  'key_missing',
  'key_invalid',
  'key_revoked',
  'key_expired',
  'scope_write_required',
  'unknown_resource',
  'unknown_learner',
  'unknown_programme',
  'invalid_email',
  'learner_identifier_missing',
  'email_domain_not_allowed',
  'already_member',
  'licence_unavailable',
  'insufficient_licences',
];

/** The codes only the management API answers: its callers, its objects and its webhook rules. */
const managementOnlyCodes = [
  'credentials_missing',
  'management_token_invalid',
  'session_expired',
  'csrf_rejected',
  'session_read_only',
  'platform_only',
  'session_only',
  'unknown_organisation',
  'unknown_api_key',
  'unknown_webhook_endpoint',
  'unknown_webhook_delivery',
  'webhook_url_refused',
  'endpoint_limit_reached',
  'delivery_pending',
  'endpoint_disabled',
];

const declaredCodes = (document: Record<string, any>): string[] =>
  document.components.schemas.ErrorCode.oneOf.map((entry: { const: string }) => entry.const);

describe('the error codes', () => {
  it('of /v1 are declared in openapi.yaml, each of them, and nothing else', () => {
    expect([...declaredCodes(loadOpenapiDocument())].sort()).toEqual(
      errorCodes.filter((code) => !managementOnlyCodes.includes(code)).sort(),
    );
  });

  it('of the management API are declared in management.yaml, each of them, and nothing else', () => {
    expect([...declaredCodes(loadManagementDocument())].sort()).toEqual(
      errorCodes.filter((code) => !partnerOnlyCodes.includes(code)).sort(),
    );
  });

  it('each have one description', () => {
    for (const document of [loadOpenapiDocument(), loadManagementDocument()]) {
      for (const entry of document.components.schemas.ErrorCode.oneOf) expect(entry.description, entry.const).toMatch(/\S/);
    }
  });

  it('are each carried by an error response of openapi.yaml with its own status, but for an address no operation has', () => {
    const document = loadOpenapiDocument();
    const carried = new Map<string, number[]>();
    for (const item of Object.values<Record<string, any>>({ ...document.paths, ...document['x-unlisted-paths'] })) {
      for (const operation of Object.values<Record<string, any>>(item)) {
        for (const [status, reference] of Object.entries<{ $ref?: string }>(operation.responses ?? {})) {
          if (!reference.$ref?.startsWith('#/components/responses/')) continue;
          const response = document.components.responses[reference.$ref.split('/').at(-1)!];
          const codes: string[] =
            response.content?.['application/json']?.schema?.allOf?.find((part: any) => part.properties?.code)?.properties.code.enum ?? [];
          for (const code of codes) carried.set(code, [...(carried.get(code) ?? []), Number(status)]);
        }
      }
    }
    for (const [code, statuses] of carried) {
      expect(declaredCodes(document), code).toContain(code);
      expect(new Set(statuses), code).toEqual(new Set([errorStatus(code as never)]));
    }
    expect(declaredCodes(document).filter((code) => !carried.has(code))).toEqual(['route_not_found']);
  });
});
