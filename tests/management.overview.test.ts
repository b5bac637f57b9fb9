import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { formatParisDate } from '../db/paris-time';
import { bearer } from './support/app';
import { addLearner, addLicences, createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

// The reads of the "Vue d'ensemble" and "Journal d'audit" sections: an organisation's licences as
// /v1/summary counts them, its keys and endpoints by state, its events of 30 days without samples,
// the API usage per key and day, and the audit log by filter and cursor.

const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const fixture = useTestApp({ managementToken, rateLimitPerMinute: 1000 });

async function read(url: string) {
  const answer = await fixture.app.inject({ method: 'GET', url: `/manage/v1${url}`, headers: bearer(managementToken) });
  return { status: answer.statusCode, body: answer.json() as Record<string, any> };
}

async function post(url: string, payload?: object) {
  const answer = await fixture.app.inject({
    method: 'POST',
    url: `/manage/v1${url}`,
    headers: bearer(managementToken),
    ...(payload ? { payload } : {}),
  });
  return { status: answer.statusCode, body: answer.json() as Record<string, any> };
}

describe('the overview', () => {
  it('counts licences as /v1/summary does, keys and endpoints by state, and the last 30 days’ events by type without samples', async () => {
    const { orgId, readKey } = await createOrgWithKeys(fixture.db, { name: 'Formations Vue' });
    await addLicences(fixture.db, orgId, 'standard', 3);
    await addLearner(fixture.db, orgId, { email: 'a@exemple.fr', licence: { type: 'standard', status: 'activée' } });
    await addLearner(fixture.db, orgId, { email: 'b@exemple.fr', status: 'invité', licence: { type: 'tutorat', status: 'attribuée' } });
    const expired = await createKey(fixture.db, orgId, ['read'], '2026-01-01');
    await post(`/organisations/${orgId}/api-keys/${expired.id}/revoke`);
    await createKey(fixture.db, orgId, ['read'], '2026-01-02');
    const endpoint = (await post(`/organisations/${orgId}/webhook-endpoints`, { url: 'https://93.184.216.34/r' })).body.endpoint;
    await post(`/organisations/${orgId}/webhook-endpoints/${endpoint.id}/test`);
    await post(`/organisations/${orgId}/webhook-endpoints/${endpoint.id}/example`, { event_type: 'quiz.completed' });
    const event = (type: string, daysAgo: number) =>
      sql`insert into events (org_id, type, data, created_at) values (${orgId}, ${type}, '{}', now() - make_interval(days => ${daysAgo}))`.execute(
        fixture.db,
      );
    for (const [type, daysAgo] of [
      ['quiz.completed', 1],
      ['quiz.completed', 29],
      ['course.started', 2],
      ['course.started', 31],
    ] as const)
      await event(type, daysAgo);

    const summary = await fixture.app.inject({ method: 'GET', url: '/v1/summary', headers: bearer(readKey) });
    const { utilisateurs, licences } = summary.json().data;
    const overview = await read(`/organisations/${orgId}/overview`);
    expect(overview.status).toBe(200);
    expect(overview.body).toEqual({
      organisation: { id: orgId, name: 'Formations Vue' },
      learners: { total: utilisateurs.total, active: utilisateurs.actifs },
      licences: {
        standard: { total: licences.standard.total, available: licences.standard.disponibles, used: licences.standard.utilisees },
        tutorat: { total: licences.tutorat.total, available: licences.tutorat.disponibles, used: licences.tutorat.utilisees },
      },
      api_keys: { active: 2, expired: 1, revoked: 1 },
      webhook_endpoints: { active: 1, disabled: 0 },
      events_last_30_days: [
        { event_type: 'quiz.completed', count: 2 },
        { event_type: 'course.started', count: 1 },
      ],
    });
    expect(overview.body.licences.standard).toEqual({ total: 4, available: 3, used: 1 });
  });
});

describe('the API usage', () => {
  it('gives each key its requests per day, zeros included, over the days asked', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Usage' });
    const { id } = await createKey(fixture.db, orgId, ['read']);
    const today = formatParisDate(new Date());
    const yesterday = formatParisDate(new Date(Date.now() - 86_400_000));
    await sql`insert into api_key_daily_usage (key_id, day, accepted, rate_limited, refused) values
      (${id}, ${today}::date, 7, 2, 0), (${id}, ${yesterday}::date, 3, 0, 1)`.execute(fixture.db);
    const usage = await read(`/organisations/${orgId}/api-usage?days=3`);
    expect(usage.status).toBe(200);
    expect(usage.body.to).toBe(today);
    const key = usage.body.keys.find((k: { key_id: string }) => k.key_id === id);
    expect(key.state).toBe('active');
    expect(key.days).toHaveLength(3);
    expect(key.days.slice(1)).toEqual([
      { date: yesterday, accepted: 3, rate_limited: 0, refused: 1 },
      { date: today, accepted: 7, rate_limited: 2, refused: 0 },
    ]);
    expect(key.days[0]).toMatchObject({ accepted: 0, rate_limited: 0, refused: 0 });
    expect((await read(`/organisations/${orgId}/api-usage`)).body.keys[0].days).toHaveLength(30);
    expect(await read(`/organisations/${orgId}/api-usage?days=31`)).toMatchObject({ status: 400, body: { param: 'days' } });
  });
});

describe('the audit log', () => {
  it('lists changes newest first, by action and outcome, in pages by cursor, and refuses a forged cursor', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Audit' });
    for (let i = 0; i < 5; i++) await post(`/organisations/${orgId}/api-keys`, { label: `Clé ${i}` });
    const endpoint = (await post(`/organisations/${orgId}/webhook-endpoints`, { url: 'https://93.184.216.34/r' })).body.endpoint;
    const all = await read(`/organisations/${orgId}/audit-events`);
    expect(all.body.data.map((row: { action: string }) => row.action)).toEqual(['createWebhookEndpoint', ...Array(5).fill('createApiKey')]);
    expect(all.body.data[0]).toMatchObject({
      actor: { kind: 'platform', email: null },
      target: { kind: 'webhook_endpoint', id: endpoint.id },
      outcome: 'succeeded',
      refusal_code: null,
      details: { url: 'https://93.184.216.34/r' },
    });
    const keys = await read(`/organisations/${orgId}/audit-events?action=createApiKey&outcome=succeeded`);
    expect(keys.body.data.map((row: { details: { label: string } }) => row.details.label)).toEqual([
      'Clé 4',
      'Clé 3',
      'Clé 2',
      'Clé 1',
      'Clé 0',
    ]);
    expect((await read(`/organisations/${orgId}/audit-events?outcome=refused`)).body.data).toEqual([]);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof read>> = await read(
        `/organisations/${orgId}/audit-events?limit=4${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.data.map((row: { id: string }) => row.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.body.data.map((row: { id: string }) => row.id));

    const forged = Buffer.from(JSON.stringify(['2026-11-28T10:00:00.000Z', '6f1c2b0e-4d7a-4c1e-9b3f-2a5d8e7c9b10'])).toString('base64url');
    expect(await read(`/organisations/${orgId}/audit-events?cursor=${forged}`)).toMatchObject({
      status: 400,
      body: { code: 'invalid_parameter', param: 'cursor' },
    });
    const other = await createOrgWithKeys(fixture.db, { name: 'Formations Autre Audit' });
    expect((await read(`/organisations/${other.orgId}/audit-events`)).body.data).toEqual([]);
  });
});
