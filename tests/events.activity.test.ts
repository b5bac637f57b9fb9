import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeQuiz, issueCertificate, openLesson, recordLogin, submitSatisfaction } from '../db/activity';
import { formatParisRfc3339 } from '../db/paris-time';
import { parisRfc3339 } from '../db/render';
import { createEndpoint, listDeliveriesPage } from '../db/webhook-endpoints';
import { recordEvent } from '../db/webhooks';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { verifyWebhook } from '../src/webhooks/verify';
import { startWebhookDelivery, type WebhookDelivery } from '../src/webhooks/worker';
import { bearer, buildTestApp, testConfig } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { createProgramme, enrolLearner } from './support/learning-fixture';
import { useTestDatabase } from './support/lifecycle';
import { startWebhookReceiver, type WebhookReceiver, webhookBodyErrors } from './support/webhook-receiver';

const database = useTestDatabase();
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let worker: WebhookDelivery;
let receiver: WebhookReceiver;
let secret: string;
let endpointId: string;

beforeAll(async () => {
  org = await createOrgWithKeys(database.db);
  receiver = await startWebhookReceiver();
  worker = await startWebhookDelivery({
    connectionString: database.url,
    db: database.db,
    config: testConfig({ webhookAllowInsecure: true }),
  });
  secret = generateWebhookSecret();
  endpointId = (
    await createEndpoint(database.db, {
      orgId: org.orgId,
      url: receiver.url,
      secret,
      eventTypes: [
        'quiz.completed',
        'course.started',
        'programme.completed',
        'learner.enrolled',
        'learner.activated',
        'satisfaction.submitted',
      ],
    })
  ).id;
});
afterAll(async () => {
  await worker.stop();
  await receiver.close();
});

/** The bodies received for these event ids, checked (signature, schema) on the way. */
async function receivedBodies(eventIds: string[]) {
  await receiver.waitFor((r) => eventIds.every((id) => r.some((x) => JSON.parse(x.rawBody).id === id)));
  return eventIds.map((id) => {
    const request = receiver.received.find((x) => JSON.parse(x.rawBody).id === id)!;
    const body = verifyWebhook(request.rawBody, request.headers['x-service-signature'], secret);
    expect(request.event).toBe(body.type);
    expect(webhookBodyErrors(body), body.type).toEqual([]);
    return body as { id: string; type: string; created_at: string; data: any };
  });
}

async function eventCount(): Promise<number> {
  return (
    await database.db
      .selectFrom('events')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('org_id', '=', org.orgId)
      .executeTakeFirstOrThrow()
  ).n;
}

const at = (text: string) => new Date(text);
const learnerOf = (userId: string, email: string) => ({ user_id: userId, email, name: 'Claire Martin' });

describe('events from the data changes that cause them', () => {
  it('a learner’s path produces each event once, with the payload of the contract', async () => {
    const programme = await createProgramme(database.db, org.orgId);
    const [plain, quiz, otherCourse] = programme.lessons as [
      (typeof programme.lessons)[0],
      (typeof programme.lessons)[0],
      (typeof programme.lessons)[0],
    ];
    const learner = await enrolLearner(database.db, org.orgId, 'claire.martin@exemple.fr', [programme.programmeId]);
    const expectedLearner = learnerOf(learner.userId, 'claire.martin@exemple.fr');
    const ids = { orgId: org.orgId, membershipId: learner.membershipId };

    // First login: learner.activated; the second login records nothing.
    const firstLogin = await recordLogin(database.db, {
      ...ids,
      startedAt: at('2026-03-02T08:00:00.250Z'),
      endedAt: at('2026-03-02T09:00:00Z'),
      ip: '203.0.113.7',
      userAgent: 'Firefox',
    });
    const secondLogin = await recordLogin(database.db, {
      ...ids,
      startedAt: at('2026-03-03T08:00:00Z'),
      endedAt: null,
      ip: '203.0.113.7',
      userAgent: 'Firefox',
    });
    expect(firstLogin.activated).toBe(true);
    expect(secondLogin).toEqual({ activated: false, eventId: null });

    // Lessons: course.started the first time in each course, never again.
    const opened = [];
    for (const [lesson, when] of [
      [plain, '2026-03-02T08:05:00.031Z'],
      [quiz, '2026-03-02T08:20:00Z'],
      [plain, '2026-03-02T08:40:00Z'],
      [otherCourse, '2026-07-01T10:00:00Z'],
    ] as const) {
      opened.push(await openLesson(database.db, { ...ids, lessonId: lesson.id, openedAt: at(when), activeSeconds: 600 }));
    }
    expect(opened.map((o) => o.courseStarted)).toEqual([true, false, false, true]);

    const [question1, question2] = quiz.questions as [(typeof quiz.questions)[0], (typeof quiz.questions)[0]];
    const firstAttempt = await completeQuiz(database.db, {
      ...ids,
      lessonId: quiz.id,
      completedAt: at('2026-03-02T08:30:05.912Z'),
      answers: [
        { questionId: question1.id, chosenOption: 'INDEX', answeredAt: at('2026-03-02T08:29:37.204Z') },
        { questionId: question2.id, chosenOption: '$', answeredAt: at('2026-03-02T08:30:01Z') },
      ],
    });
    const secondAttempt = await completeQuiz(database.db, {
      ...ids,
      lessonId: quiz.id,
      completedAt: at('2026-03-02T08:35:00Z'),
      answers: [
        { questionId: question1.id, chosenOption: 'EQUIV', answeredAt: at('2026-03-02T08:34:00Z') },
        { questionId: question2.id, chosenOption: '$', answeredAt: at('2026-03-02T08:34:30Z') },
      ],
    });
    expect([firstAttempt.attemptNo, firstAttempt.score, firstAttempt.passed]).toEqual([1, 50, true]);
    expect([secondAttempt.attemptNo, secondAttempt.score, secondAttempt.passed]).toEqual([2, 100, true]);

    const certificate = await issueCertificate(database.db, {
      ...ids,
      programmeId: programme.programmeId,
      issuedAt: at('2026-07-02T15:56:10.377Z'),
    });
    expect(
      await issueCertificate(database.db, { ...ids, programmeId: programme.programmeId, issuedAt: at('2026-07-03T10:00:00Z') }),
    ).toEqual({ issued: false, eventId: null });
    const survey = await submitSatisfaction(database.db, {
      ...ids,
      programmeId: programme.programmeId,
      rating: 5,
      nps: 9,
      verbatim: 'Très concret.',
      answeredAt: at('2026-07-03T08:15:02.118Z'),
    });

    const eventIds = [
      firstLogin.eventId!,
      opened[0]!.eventId!,
      opened[3]!.eventId!,
      firstAttempt.eventId,
      secondAttempt.eventId,
      certificate.eventId!,
      survey.eventId,
    ];
    expect(await eventCount()).toBe(eventIds.length);
    const [activated, started, startedOther, quiz1, quiz2, completed, satisfaction] = await receivedBodies(eventIds);

    expect(activated!.data).toEqual({ learner: expectedLearner, activated_at: '2026-03-02T09:00:00.250+01:00' });
    expect(started!.data).toEqual({
      learner: expectedLearner,
      course_id: plain.courseId,
      programme: { slug: programme.slug, title: programme.title },
      first_started_at: '2026-03-02T09:05:00.031+01:00',
    });
    expect(startedOther!.data).toMatchObject({ course_id: otherCourse.courseId, first_started_at: '2026-07-01T12:00:00.000+02:00' });
    expect(quiz1!.data).toEqual({
      learner: expectedLearner,
      programme: { slug: programme.slug, title: programme.title },
      lesson: { key: quiz.key, title: 'Quiz — formules', module_title: 'Module 1 — Formules', course_id: quiz.courseId },
      attempt_number: 1,
      score: 50,
      passed: true,
      completed_at: '2026-03-02T09:30:05.912+01:00',
      answers: [
        {
          question: 'Quelle fonction renvoie la position d’une valeur ?',
          options: ['EQUIV', 'INDEX', 'RECHERCHEV'],
          chosen_label: 'INDEX',
          correct_label: 'EQUIV',
          is_correct: false,
          attempt_no: 1,
          answered_at: '2026-03-02T09:29:37.204+01:00',
        },
        {
          question: 'Quel symbole fige une référence ?',
          options: ['$', '#', '&'],
          chosen_label: '$',
          correct_label: '$',
          is_correct: true,
          attempt_no: 1,
          answered_at: '2026-03-02T09:30:01.000+01:00',
        },
      ],
    });
    expect(quiz2!.data).toMatchObject({
      attempt_number: 2,
      score: 100,
      answers: [
        { is_correct: true, attempt_no: 2 },
        { is_correct: true, attempt_no: 2 },
      ],
    });
    // 4 visits of 10 minutes on the programme’s lessons; best score at its one quiz: 100.
    expect(completed!.data).toEqual({
      learner: expectedLearner,
      programme: { slug: programme.slug, title: programme.title },
      total_hours: 0.7,
      completion_score: 100,
      attestation_issued_at: '2026-07-02T17:56:10.377+02:00',
    });
    expect(satisfaction!.data).toEqual({
      learner: expectedLearner,
      programme: { slug: programme.slug, title: programme.title },
      rating: 5,
      nps: 9,
      verbatim: 'Très concret.',
      answered_at: '2026-07-03T10:15:02.118+02:00',
    });

    // The data behind the events.
    const progress = await database.db
      .selectFrom('lesson_progress')
      .select(['lesson_id', 'visits', 'active_seconds'])
      .where('membership_id', '=', learner.membershipId)
      .orderBy('first_visit_at')
      .execute();
    expect(progress).toEqual([
      { lesson_id: plain.id, visits: 2, active_seconds: 1200 },
      { lesson_id: quiz.id, visits: 1, active_seconds: 600 },
      { lesson_id: otherCourse.id, visits: 1, active_seconds: 600 },
    ]);
    const app = await buildTestApp(database.db);
    try {
      const users = (await app.inject({ url: '/v1/users', headers: bearer(org.readKey) })).json();
      expect(users.data[0]).toMatchObject({ email: 'claire.martin@exemple.fr', statut: 'actif', licence_statut: 'activée' });
    } finally {
      await app.close();
    }
  });

  it('a rolled-back change leaves no event, no delivery and no data', async () => {
    const programme = await createProgramme(database.db, org.orgId, 'word-avance', 'Word avancé');
    const learner = await enrolLearner(database.db, org.orgId, 'hugo.bernard@exemple.fr', [programme.programmeId]);
    const eventsBefore = await eventCount();
    const deliveriesBefore = (await listDeliveriesPage(database.db, org.orgId, { endpointId }, null, 1000)).length;
    const receivedBefore = receiver.received.length;
    await expect(
      database.db.transaction().execute(async (trx) => {
        await openLesson(trx, {
          orgId: org.orgId,
          membershipId: learner.membershipId,
          lessonId: programme.lessons[0]!.id,
          openedAt: new Date(),
          activeSeconds: 60,
        });
        await recordEvent(trx, { orgId: org.orgId, type: 'learner.enrolled', data: { learner: null, status: 'pending', programmes: [] } });
        throw new Error('annulé');
      }),
    ).rejects.toThrow('annulé');
    expect(await eventCount()).toBe(eventsBefore);
    expect(await listDeliveriesPage(database.db, org.orgId, { endpointId }, null, 1000)).toHaveLength(deliveriesBefore);
    expect(
      await database.db.selectFrom('lesson_progress').select('id').where('membership_id', '=', learner.membershipId).execute(),
    ).toEqual([]);
    const jobs = await sql<{
      n: number;
    }>`select count(*)::int as n from pgboss.job where name = 'webhook-delivery' and state = 'created'`.execute(database.db);
    expect(jobs.rows[0]!.n).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(receiver.received).toHaveLength(receivedBefore);

    // The same change committed: its event is delivered.
    const opened = await openLesson(database.db, {
      orgId: org.orgId,
      membershipId: learner.membershipId,
      lessonId: programme.lessons[0]!.id,
      openedAt: new Date(),
      activeSeconds: 60,
    });
    expect(opened.courseStarted).toBe(true);
    await receivedBodies([opened.eventId!]);
  });

  it('two lessons of a new course opened at the same time make one course.started', async () => {
    const programme = await createProgramme(database.db, org.orgId, 'powerpoint', 'PowerPoint');
    const learners = await Promise.all(
      ['l1@exemple.fr', 'l2@exemple.fr', 'l3@exemple.fr'].map((email) =>
        enrolLearner(database.db, org.orgId, email, [programme.programmeId]),
      ),
    );
    const [first, second] = programme.lessons;
    const start = Date.now();
    for (const learner of learners) {
      // One after the other in time (a learner reads one lesson at a time), all sent at once.
      const results = await Promise.all(
        [first!, second!, first!, second!].map((lesson, i) =>
          openLesson(database.db, {
            orgId: org.orgId,
            membershipId: learner.membershipId,
            lessonId: lesson.id,
            openedAt: new Date(start + i * 30_000),
            activeSeconds: 30,
          }),
        ),
      );
      expect(results.filter((r) => r.courseStarted)).toHaveLength(1);
    }
  });

  it('refuses a visit over time the learner already spent on a lesson, even when both arrive at once, and writes nothing for it', async () => {
    const programme = await createProgramme(database.db, org.orgId, 'access', 'Access');
    const learner = await enrolLearner(database.db, org.orgId, 'ines@exemple.fr', [programme.programmeId]);
    const visit = (lesson: number, openedAt: string, minutes: number) =>
      openLesson(database.db, {
        orgId: org.orgId,
        membershipId: learner.membershipId,
        lessonId: programme.lessons[lesson]!.id,
        openedAt: new Date(openedAt),
        activeSeconds: minutes * 60,
      });
    const outcomes = await Promise.allSettled([
      visit(0, '2026-05-04T08:00:00Z', 20),
      visit(1, '2026-05-04T08:10:00Z', 20),
      visit(2, '2026-05-04T08:05:00Z', 10),
    ]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/already on a lesson/);
    const intervals = await database.db
      .selectFrom('activity_intervals')
      .select(['lesson_id'])
      .where('membership_id', '=', learner.membershipId)
      .execute();
    const visits = await database.db
      .selectFrom('lesson_progress')
      .select(['lesson_id'])
      .where('membership_id', '=', learner.membershipId)
      .execute();
    expect(intervals).toHaveLength(1);
    expect(visits).toEqual(intervals);
    // Right after it, and right before it, the learner may open lessons again.
    const [kept] = intervals;
    const index = programme.lessons.findIndex((lesson) => lesson.id === kept!.lesson_id);
    const { started_at: from, ended_at: to } = await database.db
      .selectFrom('activity_intervals')
      .select(['started_at', 'ended_at'])
      .where('membership_id', '=', learner.membershipId)
      .executeTakeFirstOrThrow();
    await visit((index + 1) % 3, to.toISOString(), 5);
    await visit((index + 2) % 3, new Date(from.getTime() - 5 * 60_000).toISOString(), 5);
  });

  it('refuses activity outside the learner’s enrolments', async () => {
    const programme = await createProgramme(database.db, org.orgId, 'outlook', 'Outlook');
    const notEnrolled = await enrolLearner(database.db, org.orgId, 'nina@exemple.fr', []);
    await expect(
      openLesson(database.db, {
        orgId: org.orgId,
        membershipId: notEnrolled.membershipId,
        lessonId: programme.lessons[0]!.id,
        openedAt: new Date(),
        activeSeconds: 0,
      }),
    ).rejects.toThrow(/not enrolled/);
    const other = await createOrgWithKeys(database.db, { name: 'Autre organisme' });
    await expect(
      openLesson(database.db, {
        orgId: other.orgId,
        membershipId: notEnrolled.membershipId,
        lessonId: programme.lessons[0]!.id,
        openedAt: new Date(),
        activeSeconds: 0,
      }),
    ).rejects.toThrow(/is not one of organisation/);
  });

  it('RFC 3339 Paris timestamps agree in JavaScript and in SQL, across both offsets and DST changes', async () => {
    const instants = [
      '2026-01-14T08:05:21.640Z',
      '2026-03-29T00:59:59.999Z',
      '2026-03-29T01:00:00.000Z',
      '2026-10-25T00:30:00.001Z',
      '2026-10-25T01:30:00.500Z',
      '2026-12-31T23:00:00.000Z',
    ];
    for (const instant of instants) {
      const rendered = await database.db.selectNoFrom(parisRfc3339(sql`${instant}::timestamptz`).as('sql')).executeTakeFirstOrThrow();
      expect(rendered.sql, instant).toBe(formatParisRfc3339(new Date(instant)));
    }
  });
});
