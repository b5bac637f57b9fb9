import { describe, expect, it } from 'vitest';
import { loadManagementDocument } from '../src/openapi-document';
import { bearer } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

// Every operation of management.yaml under an organisation, probed on another organisation by each
// caller, with or without a body: always the same 404, and nothing changed. The operations come
// from the document, so a new one is probed without a word here.

const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const publicBaseUrl = 'http://localhost:3000';
const fixture = useTestApp({ managementToken, publicBaseUrl, rateLimitPerMinute: 10_000, managementRateLimitPerMinute: 10_000 });

const someId = '6f1c2b0e-4d7a-4c1e-9b3f-2a5d8e7c9b10';

function organisationOperations(): { method: string; path: string; operationId: string }[] {
  const document = loadManagementDocument();
  return Object.entries<Record<string, { operationId?: string }>>(document.paths).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) =>
      operation?.operationId && path.includes('{org_id}')
        ? [{ method: method.toUpperCase(), path, operationId: operation.operationId }]
        : [],
    ),
  );
}

async function sessionHeaders(orgId: string) {
  const link = await fixture.app.inject({
    method: 'POST',
    url: `/manage/v1/organisations/${orgId}/portal-links`,
    headers: bearer(managementToken),
    payload: { actor_email: 'admin@formations.fr' },
  });
  const url = new URL(link.json<{ url: string }>().url);
  const opened = await fixture.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  const cookie = `portail_session=${opened.cookies.find((c) => c.name === 'portail_session')!.value}`;
  const session = await fixture.app.inject({ method: 'GET', url: '/manage/v1/session', headers: { cookie } });
  return { cookie, origin: publicBaseUrl, 'x-csrf-token': session.json<{ csrf_token: string }>().csrf_token };
}

describe('another organisation’s paths', () => {
  it('answer 404 unknown_organisation to a session and to the platform (for an organisation that does not exist), on every operation', async () => {
    const operations = organisationOperations();
    expect(operations.length).toBeGreaterThanOrEqual(19);
    const mine = await createOrgWithKeys(fixture.db, { name: 'Formations Sonde' });
    const theirs = await createOrgWithKeys(fixture.db, { name: 'Formations Sondée' });
    const session = await sessionHeaders(mine.orgId);
    const auditBefore = await fixture.db.selectFrom('audit_events').select('id').where('org_id', '=', theirs.orgId).execute();
    const probes = [
      { caller: 'session', headers: session, orgId: theirs.orgId },
      { caller: 'platform', headers: bearer(managementToken), orgId: '00000000-0000-4000-8000-000000000000' },
    ];
    for (const { caller, headers, orgId } of probes) {
      for (const operation of operations) {
        const url = `/manage/v1${operation.path.replace('{org_id}', orgId).replace(/\{[a-z_]+\}/g, someId)}`;
        for (const payload of operation.method === 'GET' || operation.method === 'DELETE' ? [undefined] : [undefined, {}]) {
          const answer = await fixture.app.inject({
            method: operation.method as 'GET',
            url,
            headers,
            ...(payload === undefined ? {} : { payload }),
          });
          expect(
            { status: answer.statusCode, code: answer.json().code },
            `${caller} ${operation.operationId} ${payload === undefined ? 'without' : 'with'} a body`,
          ).toEqual({ status: 404, code: 'unknown_organisation' });
        }
      }
    }
    const auditAfter = await fixture.db.selectFrom('audit_events').select('id').where('org_id', '=', theirs.orgId).execute();
    expect(auditAfter).toEqual(auditBefore);
  });
});
