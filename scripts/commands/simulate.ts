import { sql } from 'kysely';
import { completeQuiz, issueCertificate, openLesson, recordLogin, submitSatisfaction } from '../../db/activity';
import type { DB } from '../../db/connection';
import { installDeliveryQueue } from '../../db/webhooks';
import { type AdminCommand, positiveInteger, requiredUuid, requireOrganisation, UsageError } from '../command';
import { count, table } from '../output';

/**
 * `simulate`: live learner activity played through the real write paths (db/activity.ts), so that
 * the events, their webhooks and the read resources all see it as they would see real learners.
 * Each step moves one enrolled learner forward: first login, next lesson (and its quiz), then the
 * certificate and a satisfaction survey; a learner who has finished retakes a quiz or answers a
 * survey again.
 */

interface Enrolment {
  membershipId: string;
  programmeId: string;
}

interface World {
  enrolments: Enrolment[];
  /** Lessons of each programme in course order. */
  lessons: Map<string, { id: string; hasQuiz: boolean }[]>;
  questions: Map<string, { id: string; options: string[]; correct: string }[]>;
}

async function loadWorld(db: DB, orgId: string): Promise<World> {
  const enrolments = await db
    .selectFrom('programme_enrolments as pe')
    .innerJoin('memberships as m', 'm.id', 'pe.membership_id')
    .select(['pe.membership_id as membershipId', 'pe.programme_id as programmeId'])
    .where('pe.org_id', '=', orgId)
    .where('m.status', '<>', 'suspendu')
    .where(({ exists, selectFrom }) => exists(selectFrom('lessons').select('id').whereRef('lessons.programme_id', '=', 'pe.programme_id')))
    .execute();
  const lessonRows = await db
    .selectFrom('lessons as l')
    .innerJoin('modules as m', 'm.id', 'l.module_id')
    .select(['l.id', 'l.programme_id', 'l.has_quiz'])
    .where('l.org_id', '=', orgId)
    .orderBy('l.programme_id')
    .orderBy('m.position')
    .orderBy('l.position')
    .execute();
  const questionRows = await db
    .selectFrom('quiz_questions')
    .select(['id', 'lesson_id', 'options', 'correct_option'])
    .where('org_id', '=', orgId)
    .orderBy('lesson_id')
    .orderBy('position')
    .execute();
  const lessons = new Map<string, { id: string; hasQuiz: boolean }[]>();
  for (const row of lessonRows)
    lessons.set(row.programme_id, [...(lessons.get(row.programme_id) ?? []), { id: row.id, hasQuiz: row.has_quiz }]);
  const questions = new Map<string, { id: string; options: string[]; correct: string }[]>();
  for (const row of questionRows) {
    questions.set(row.lesson_id, [
      ...(questions.get(row.lesson_id) ?? []),
      { id: row.id, options: row.options, correct: row.correct_option },
    ]);
  }
  return { enrolments, lessons, questions };
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const shuffled = <T>(items: readonly T[]): T[] =>
  items
    .map((item) => ({ item, key: Math.random() }))
    .sort((a, b) => a.key - b.key)
    .map((e) => e.item);
const between = (low: number, high: number) => low + Math.floor(Math.random() * (high - low + 1));
const secondsAgo = (seconds: number) => new Date(Date.now() - seconds * 1000);

const browsers = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:129.0) Gecko/20100101 Firefox/129.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
];
const verbatims = [
  'Formation très concrète, les exercices sont directement applicables.',
  'Bon rythme, mais certains quiz étaient difficiles.',
  'Le formateur était disponible et clair.',
  'J’aurais aimé davantage de cas pratiques.',
  null,
];

type LearnerIds = { orgId: string; membershipId: string };
type Step = { action: string; events: string[] };

/**
 * One step for one learner, recording at most `budget` events; returns their types. The learner
 * logs in first, then reads the next lesson not yet viewed, then gets the certificate; once
 * certified, they retake a quiz or answer another survey.
 */
async function step(db: DB, world: World, orgId: string, enrolment: Enrolment, budget: number): Promise<Step> {
  const ids = { orgId, membershipId: enrolment.membershipId };
  const state = await learnerState(db, enrolment);
  if (state.first_login_at === null) return firstLogin(db, ids);
  const lessons = world.lessons.get(enrolment.programmeId)!;
  const viewed = new Set(state.viewed ?? []);
  const next = lessons.find((lesson) => !viewed.has(lesson.id));
  if (next) return readLesson(db, world, ids, next, budget);
  if (!state.certified) return certify(db, ids, enrolment.programmeId, budget);
  return afterCertificate(db, world, ids, enrolment.programmeId, lessons);
}

/** Where the learner stands in the programme: their first login, the lessons viewed, the certificate. */
function learnerState(db: DB, enrolment: Enrolment) {
  return db
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select([
      'a.first_login_at',
      (eb) =>
        eb
          .selectFrom('lesson_progress')
          .select(sql<string[]>`coalesce(array_agg(lesson_id), '{}')`.as('ids'))
          .where('membership_id', '=', enrolment.membershipId)
          .where('programme_id', '=', enrolment.programmeId)
          .where('viewed', '=', true)
          .as('viewed'),
      (eb) =>
        eb
          .selectFrom('documents')
          .select(sql<boolean>`true`.as('yes'))
          .where('membership_id', '=', enrolment.membershipId)
          .where('programme_id', '=', enrolment.programmeId)
          .where('type', '=', 'Attestation')
          .as('certified'),
    ])
    .where('m.id', '=', enrolment.membershipId)
    .executeTakeFirstOrThrow();
}

async function firstLogin(db: DB, ids: LearnerIds): Promise<Step> {
  const minutes = between(10, 90);
  const login = await recordLogin(db, {
    ...ids,
    startedAt: secondsAgo(minutes * 60),
    endedAt: new Date(),
    ip: `203.0.113.${between(1, 254)}`,
    userAgent: pick(browsers),
  });
  return { action: 'connexion', events: login.activated ? ['learner.activated'] : [] };
}

/** A few minutes on the lesson up to now, after whatever the learner was reading before (one lesson at a time), then its quiz. */
async function readLesson(db: DB, world: World, ids: LearnerIds, lesson: { id: string; hasQuiz: boolean }, budget: number): Promise<Step> {
  const { lastCourseEnd } = await db
    .selectFrom('activity_intervals')
    .select((eb) => eb.fn.max('ended_at').as('lastCourseEnd'))
    .where('membership_id', '=', ids.membershipId)
    .where('kind', '=', 'cours')
    .executeTakeFirstOrThrow();
  const now = new Date();
  const openedAt = new Date(Math.max(now.getTime() - between(3, 25) * 60_000, lastCourseEnd ? new Date(lastCourseEnd).getTime() : 0));
  const spent = Math.max(0, Math.floor((now.getTime() - openedAt.getTime()) / 1000));
  const opened = await openLesson(db, { ...ids, lessonId: lesson.id, openedAt, activeSeconds: spent });
  const events = opened.courseStarted ? ['course.started'] : [];
  if (lesson.hasQuiz && world.questions.has(lesson.id) && events.length < budget) {
    await takeQuiz(db, world, ids, lesson.id);
    events.push('quiz.completed');
  }
  return { action: 'leçon', events };
}

/** Every lesson viewed: the certificate, then a satisfaction survey. */
async function certify(db: DB, ids: LearnerIds, programmeId: string, budget: number): Promise<Step> {
  const certificate = await issueCertificate(db, { ...ids, programmeId, issuedAt: new Date() });
  const events = certificate.issued ? ['programme.completed'] : [];
  if (events.length < budget) {
    await answerSurvey(db, ids, programmeId);
    events.push('satisfaction.submitted');
  }
  return { action: 'attestation', events };
}

/** Finished: a quiz retaken (to do better), else another survey. */
async function afterCertificate(
  db: DB,
  world: World,
  ids: LearnerIds,
  programmeId: string,
  lessons: { id: string; hasQuiz: boolean }[],
): Promise<Step> {
  const quizzes = lessons.filter((lesson) => lesson.hasQuiz && world.questions.has(lesson.id));
  if (quizzes.length > 0) {
    await takeQuiz(db, world, ids, pick(quizzes).id);
    return { action: 'quiz repassé', events: ['quiz.completed'] };
  }
  await answerSurvey(db, ids, programmeId);
  return { action: 'enquête', events: ['satisfaction.submitted'] };
}

function answerSurvey(db: DB, ids: LearnerIds, programmeId: string) {
  return submitSatisfaction(db, {
    ...ids,
    programmeId,
    rating: between(3, 5),
    nps: between(5, 10),
    verbatim: pick(verbatims),
    answeredAt: new Date(),
  });
}

/** Answers every question, right three times in four, one answer every 20-60 seconds until now. */
async function takeQuiz(db: DB, world: World, ids: LearnerIds, lessonId: string) {
  const questions = world.questions.get(lessonId)!;
  let elapsed = 0;
  const answers = [...questions]
    .reverse()
    .map((question) => {
      elapsed += between(20, 60);
      const wrong = question.options.filter((option) => option !== question.correct);
      return {
        questionId: question.id,
        chosenOption: Math.random() < 0.75 || wrong.length === 0 ? question.correct : pick(wrong),
        answeredAt: secondsAgo(elapsed),
      };
    })
    .reverse();
  await completeQuiz(db, { ...ids, lessonId, completedAt: new Date(), answers });
}

function positiveNumber(raw: string | boolean | undefined, name: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (typeof raw !== 'string' || !/^\d+(\.\d+)?$/.test(raw) || !(value > 0))
    throw new UsageError(`--${name} doit être un nombre positif (reçu « ${String(raw)} »).`);
  return value;
}

export const commands: AdminCommand[] = [
  {
    name: 'simulate',
    usage: '--org ID [--events N] [--rate R]',
    description:
      'Joue une activité réaliste d’apprenants (connexions, leçons, quiz, attestations, enquêtes) par les vrais chemins d’écriture : N événements (20 par défaut) à R par seconde (2 par défaut).',
    options: { org: { type: 'string' }, events: { type: 'string' }, rate: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const wanted = positiveInteger(context.values, 'events', 20);
      const rate = positiveNumber(context.values.rate, 'rate', 2);
      const organisation = await requireOrganisation(context.db, orgId);
      const world = await loadWorld(context.db, orgId);
      if (world.enrolments.length === 0) {
        throw new UsageError(
          `L’organisation ${orgId} n’a aucun apprenant inscrit à un programme qui a des leçons : générez des données ou inscrivez des apprenants d’abord.`,
        );
      }
      await installDeliveryQueue(context.db);

      const started = Date.now();
      const byType: Record<string, number> = {};
      const actions: Record<string, number> = {};
      let produced = 0;
      let idle = 0;
      // Learners take turns in a random order, reshuffled every round: everyone moves forward.
      let turns: Enrolment[] = [];
      while (produced < wanted) {
        if (turns.length === 0) turns = shuffled(world.enrolments);
        // Paced on the events: the next step waits for its slot at R events per second.
        const wait = started + (produced / rate) * 1000 - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const { action, events } = await step(context.db, world, orgId, turns.pop()!, wanted - produced);
        actions[action] = (actions[action] ?? 0) + 1;
        for (const type of events) byType[type] = (byType[type] ?? 0) + 1;
        produced += events.length;
        idle = events.length === 0 ? idle + 1 : 0;
        if (idle >= 1000) break;
        if (events.length > 0) context.progress(`\r${produced}/${wanted} événements`);
      }
      context.progress('\n');
      const seconds = Math.round((Date.now() - started) / 100) / 10;
      const counts = (record: Record<string, number>) => Object.entries(record).sort(([, a], [, b]) => b - a);
      return {
        json: { org: orgId, events: produced, by_type: byType, actions, seconds },
        text: [
          `${count(produced, 'événement enregistré', 'événements enregistrés')} pour « ${organisation.name} » en ${seconds.toLocaleString('fr-FR')} s` +
            (produced < wanted ? ` (sur ${wanted} demandés : arrêt après 1 000 étapes de suite sans événement).` : '.'),
          table(
            counts(byType),
            [
              { header: 'Événement', value: ([type]) => type },
              { header: 'Nombre', value: ([, n]) => n, align: 'right' },
            ],
            '',
          ),
          '',
          table(
            counts(actions),
            [
              { header: 'Étape jouée', value: ([action]) => action },
              { header: 'Nombre', value: ([, n]) => n, align: 'right' },
            ],
            '',
          ),
        ].join('\n'),
      };
    },
  },
];
