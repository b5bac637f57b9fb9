import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { managementText } from '../src/openapi-document';
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
