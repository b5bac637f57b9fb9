import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentParisYear } from '../db/paris-time';
import { createEndpoint } from '../db/webhook-endpoints';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { verifyWebhook } from '../src/webhooks/verify';
import { startWebhookDelivery, type WebhookDelivery } from '../src/webhooks/worker';
import { admin, adminFailure } from './support/admin';
import { bearer, buildTestApp, testConfig } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { createProgramme, enrolLearner } from './support/learning-fixture';
import { useTestDatabase } from './support/lifecycle';
import { startWebhookReceiver, type WebhookReceiver, webhookBodyErrors } from './support/webhook-receiver';

const database = useTestDatabase();
let worker: WebhookDelivery;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  worker = await startWebhookDelivery({
    connectionString: database.url,
    db: database.db,
    config: testConfig({ webhookAllowInsecure: true }),
  });
});
afterAll(async () => {
  await worker.stop();
  await receiver.close();
});

async function countOf(
  table: 'events' | 'logins' | 'lesson_progress' | 'quiz_attempts' | 'documents' | 'satisfaction_surveys',
  orgId: string,
) {
  return (
    await database.db.selectFrom(table).select(sql<number>`count(*)::int`.as('n')).where('org_id', '=', orgId).executeTakeFirstOrThrow()
  ).n;
}

describe('simulate', () => {
  it('plays learner activity through the write paths: events, signed deliveries and data', async () => {
    const org = await createOrgWithKeys(database.db);
    const excel = await createProgramme(database.db, org.orgId);
    const word = await createProgramme(database.db, org.orgId, 'word-avance', 'Word avancé');
    for (const [i, email] of ['ana@exemple.fr', 'bruno@exemple.fr', 'chloe@exemple.fr'].entries()) {
      await enrolLearner(database.db, org.orgId, email, i === 0 ? [excel.programmeId, word.programmeId] : [excel.programmeId]);
    }
    const secret = generateWebhookSecret();
    await createEndpoint(database.db, {
      orgId: org.orgId,
      url: receiver.url,
      secret,
      eventTypes: ['quiz.completed', 'course.started', 'programme.completed', 'learner.activated', 'satisfaction.submitted'],
    });

    const result = await admin(database.url, ['simulate', '--org', org.orgId, '--events', '30', '--rate', '100']);
    expect(result.events).toBe(30);
    expect(Object.values(result.by_type as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(30);
    // Everyone logs in first: three activations, then their courses start.
    expect(result.by_type['learner.activated']).toBe(3);
    expect(result.by_type['course.started']).toBeGreaterThanOrEqual(1);
    expect(await countOf('events', org.orgId)).toBe(30);

    await receiver.waitFor((r) => r.length === 30);
    const types: Record<string, number> = {};
    for (const request of receiver.received) {
      const body = verifyWebhook(request.rawBody, request.headers['x-service-signature'], secret);
      expect(webhookBodyErrors(body), request.rawBody).toEqual([]);
      types[body.type] = (types[body.type] ?? 0) + 1;
    }
    expect(types).toEqual(result.by_type);

    // The data behind the events is there for the read side.
    expect(await countOf('logins', org.orgId)).toBe(3);
    expect(await countOf('lesson_progress', org.orgId)).toBeGreaterThanOrEqual(result.by_type['course.started']);
    expect(await countOf('quiz_attempts', org.orgId)).toBe(result.by_type['quiz.completed'] ?? 0);
    expect(await countOf('documents', org.orgId)).toBe(result.by_type['programme.completed'] ?? 0);
    expect(await countOf('satisfaction_surveys', org.orgId)).toBe(result.by_type['satisfaction.submitted'] ?? 0);
    const app = await buildTestApp(database.db);
    try {
      const read = async (resource: string) =>
        (await app.inject({ url: `/v1/${resource}?year=${currentParisYear()}&limit=1000`, headers: bearer(org.readKey) })).json();
      const users = await read('users');
      expect(users.data.map((u: { statut: string; licence_statut: string }) => [u.statut, u.licence_statut])).toEqual([
        ['actif', 'activée'],
        ['actif', 'activée'],
        ['actif', 'activée'],
      ]);
      // The read resources show what the events announced.
      expect((await read('logins')).pagination.total).toBe(3);
      expect((await read('evaluations')).pagination.total).toBe(result.by_type['quiz.completed'] ?? 0);
      expect((await read('documents')).pagination.total).toBe(result.by_type['programme.completed'] ?? 0);
      expect((await read('satisfaction')).pagination.total).toBe(result.by_type['satisfaction.submitted'] ?? 0);
      const enrollments = await read('enrollments');
      expect(enrollments.pagination.total).toBe(4);
      expect(enrollments.data.filter((e: { lecons_vues: number }) => e.lecons_vues > 0).length).toBeGreaterThanOrEqual(1);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('refuses an organisation without learners in a programme', async () => {
    const empty = await createOrgWithKeys(database.db, { name: 'Vide' });
    const failure = await adminFailure(database.url, ['simulate', '--org', empty.orgId]);
    expect(failure.code).toBe(2);
    expect(failure.stderr).toMatch(/aucun apprenant inscrit à un programme/);
    expect((await adminFailure(database.url, ['simulate', '--org', empty.orgId, '--rate', '0'])).stderr).toMatch(
      /--rate doit être un nombre positif/,
    );
  });
});
