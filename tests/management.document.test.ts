import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { errorCodes } from '../src/http/errors';
import { loadManagementDocument, managementText } from '../src/openapi-document';
import { useTestApp } from './support/lifecycle';

// management.yaml served as it is, and its docs page beside /v1's, all without a credential; an
// integrator's generated client of openapi.yaml has no management operation.

const fixture = useTestApp({ managementToken: 'jeton-de-gestion-de-la-plateforme-0123456789abcdef' });

describe('the management API’s document', () => {
  it('is served as YAML and JSON, and its docs page shows it, while /v1’s shows openapi.yaml', async () => {
    const yaml = await fixture.app.inject({ url: '/manage/v1/openapi.yaml' });
    expect(yaml.statusCode).toBe(200);
    expect(yaml.body).toBe(managementText);
    const json = await fixture.app.inject({ url: '/manage/v1/openapi.json' });
    expect(json.json()).toEqual(parse(managementText));

    const page = await fixture.app.inject({ url: '/manage/v1/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const shown = await fixture.app.inject({ url: '/manage/v1/docs/json' });
    expect(shown.json().info.title).toBe('API de gestion — API et intégrations');
    expect(Object.keys(shown.json().paths)).toContain('/organisations/{org_id}/webhook-endpoints');
    const partners = await fixture.app.inject({ url: '/v1/docs/json' });
    expect(partners.statusCode).toBe(200);
    expect(Object.keys(partners.json().paths)).not.toContain('/organisations/{org_id}/webhook-endpoints');
    expect(JSON.stringify(partners.json())).not.toContain('createWebhookEndpoint');
  });
});

// The codes only /v1 answers: its key, its scope and its resources. Every other code of the
// catalogue may come out of the management API, so management.yaml declares it.
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
  'no_licence_available',
  'insufficient_licences',
];

describe('the management API’s error codes', () => {
  it('are declared in management.yaml, each of them, and nothing else', () => {
    const declared = loadManagementDocument().components.schemas.ErrorCode.oneOf.map((entry: { const: string }) => entry.const);
    expect([...declared].sort()).toEqual(errorCodes.filter((code) => !partnerOnlyCodes.includes(code)).sort());
  });
});
