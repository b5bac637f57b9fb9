import { sql } from 'kysely';
import type { DB } from '../../db/connection';
import { findOrganisation } from '../../db/organisations';
import { currentParisYear, formatParisDate } from '../../db/paris-time';
import { RowBuffer, writeBatch } from './bulk-insert';
import { ParisCalendar } from './calendar';
import { type ModuleTemplate, type ProgrammeTemplate, programmeTemplates, trainerNames } from './catalogue';
import { hashText, Random } from './random';
import { type Pace, type ProgrammePlan, plannedProgrammes, type Story, storyOf } from './stories';
import * as words from './vocabulary';

export interface SeedOptions {
  orgId: string;
  learners: number;
  /** Same seed, same data (for the same `year` and, in the current year, the same day). */
  seed?: number;
  /** The last of the three calendar years generated; default: the current Paris year. */
  year?: number;
  /** Nothing happens after this instant (whole Paris days before it); default: now. */
  now?: Date;
  /** After each batch: learners done, rows written so far. */
  onProgress?: (learnersDone: number, rowsWritten: number) => void;
}

export interface SeedResult {
  org: string;
  learners: number;
  seed: number;
  programmes: string[];
  from: string;
  to: string;
  rows: Record<string, number>;
}

interface Question {
  id: string;
  position: number;
  correct: string;
}
interface Lesson {
  id: string;
  index: number;
  estimatedMinutes: number;
  hasQuiz: boolean;
  isMilestone: boolean;
  passScore: number;
  questions: Question[];
  options: string[][];
}
interface Programme {
  id: string;
  index: number;
  slug: string;
  template: ProgrammeTemplate;
  lessons: Lesson[];
  moduleTopics: string[];
}
interface SessionSlot {
  id: string;
  attendees: number;
  startsAt: Date;
  title: string;
  programmeId: string;
}
/** How a learner studies: pace (days between sessions), skill, drop-out risk, lab use, devices. */
interface Traits {
  gap: number;
  skill: number;
  dropRate: number;
  labUser: boolean;
  agents: (string | null)[];
  ips: string[];
}

const dayEnd = 23 * 60 + 59;
const learnersPerBatch = 250;

/** Accents off, lower case, words joined by dashes: the local part of a generated email. */
function emailWord(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function buffers() {
  return {
    accounts: new RowBuffer('accounts', { id: 'uuid', email: 'text', name: 'text', created_at: 'time', first_login_at: 'time' }),
    memberships: new RowBuffer('memberships', {
      id: 'uuid',
      org_id: 'uuid',
      account_id: 'uuid',
      status: 'text',
      invited_at: 'time',
      joined_at: 'time',
      created_at: 'time',
      // What the copying triggers fill in when triggers run.
      email: 'text',
      name: 'text',
    }),
    licences: new RowBuffer('licences', {
      org_id: 'uuid',
      type: 'text',
      status: 'text',
      membership_id: 'uuid',
      assigned_at: 'time',
      activated_at: 'time',
      revoked_at: 'time',
      created_at: 'time',
    }),
    programme_enrolments: new RowBuffer('programme_enrolments', {
      id: 'uuid',
      org_id: 'uuid',
      membership_id: 'uuid',
      programme_id: 'uuid',
      enrolled_at: 'time',
    }),
    tutoring_sessions: new RowBuffer('tutoring_sessions', {
      id: 'uuid',
      org_id: 'uuid',
      programme_id: 'uuid',
      title: 'text',
      starts_at: 'time',
      planned_minutes: 'int',
      trainer_name: 'text',
    }),
    tutoring_attendance: new RowBuffer('tutoring_attendance', {
      id: 'uuid',
      org_id: 'uuid',
      session_id: 'uuid',
      membership_id: 'uuid',
      present: 'bool',
      connected_minutes: 'int',
      signed_by_learner: 'bool',
      signed_by_trainer: 'bool',
      // What the copying trigger fills in when triggers run.
      session_starts_at: 'time',
      session_title: 'text',
      session_programme_id: 'uuid',
      email: 'text',
    }),
    activity_intervals: new RowBuffer('activity_intervals', {
      org_id: 'uuid',
      membership_id: 'uuid',
      kind: 'text',
      started_at: 'time',
      ended_at: 'time',
      programme_id: 'uuid',
      lesson_id: 'uuid',
      attendance_id: 'uuid',
      opens_visit: 'bool',
    }),
    logins: new RowBuffer('logins', {
      org_id: 'uuid',
      membership_id: 'uuid',
      started_at: 'time',
      ended_at: 'time',
      ip: 'inet',
      user_agent: 'text',
    }),
    lesson_progress: new RowBuffer('lesson_progress', {
      org_id: 'uuid',
      membership_id: 'uuid',
      programme_id: 'uuid',
      lesson_id: 'uuid',
      viewed: 'bool',
      viewed_at: 'time',
      visits: 'int',
      active_seconds: 'int',
      first_visit_at: 'time',
      last_visit_at: 'time',
    }),
    quiz_attempts: new RowBuffer('quiz_attempts', {
      id: 'uuid',
      org_id: 'uuid',
      membership_id: 'uuid',
      programme_id: 'uuid',
      lesson_id: 'uuid',
      attempt_no: 'int',
      score: 'int',
      passed: 'bool',
      completed_at: 'time',
    }),
    quiz_answers: new RowBuffer('quiz_answers', {
      org_id: 'uuid',
      attempt_id: 'uuid',
      question_id: 'uuid',
      position: 'int',
      chosen_option: 'text',
      is_correct: 'bool',
      answered_at: 'time',
      // What the copying trigger fills in when triggers run.
      membership_id: 'uuid',
      programme_id: 'uuid',
      attempt_no: 'int',
      attempt_day: 'date',
      lesson_id: 'uuid',
      attempt_score: 'int',
      attempt_passed: 'bool',
    }),
    documents: new RowBuffer('documents', {
      id: 'uuid',
      org_id: 'uuid',
      membership_id: 'uuid',
      programme_id: 'uuid',
      type: 'text',
      issued_at: 'time',
      hours: 'numeric',
      completion_score: 'int',
    }),
    satisfaction_surveys: new RowBuffer('satisfaction_surveys', {
      id: 'uuid',
      org_id: 'uuid',
      membership_id: 'uuid',
      programme_id: 'uuid',
      rating: 'int',
      nps: 'int',
      verbatim: 'text',
      answered_at: 'time',
    }),
    tutoring_ratings: new RowBuffer('tutoring_ratings', {
      id: 'uuid',
      org_id: 'uuid',
      membership_id: 'uuid',
      session_id: 'uuid',
      session_rating: 'int',
      trainer_rating: 'int',
      comment: 'text',
      submitted_at: 'time',
    }),
    lesson_ratings: new RowBuffer('lesson_ratings', {
      id: 'uuid',
      org_id: 'uuid',
      membership_id: 'uuid',
      programme_id: 'uuid',
      lesson_id: 'uuid',
      rating: 'int',
      comment: 'text',
      submitted_at: 'time',
    }),
  };
}
type Buffers = ReturnType<typeof buffers>;

function catalogueBuffers() {
  return {
    programmes: new RowBuffer('programmes', { id: 'uuid', org_id: 'uuid', slug: 'text', title: 'text' }),
    courses: new RowBuffer('courses', { id: 'uuid', org_id: 'uuid', programme_id: 'uuid', position: 'int', title: 'text' }),
    modules: new RowBuffer('modules', {
      id: 'uuid',
      org_id: 'uuid',
      programme_id: 'uuid',
      course_id: 'uuid',
      position: 'int',
      title: 'text',
    }),
    lessons: new RowBuffer('lessons', {
      id: 'uuid',
      org_id: 'uuid',
      programme_id: 'uuid',
      module_id: 'uuid',
      position: 'int',
      key: 'text',
      title: 'text',
      estimated_minutes: 'int',
      has_quiz: 'bool',
      is_milestone: 'bool',
      pass_score: 'int',
    }),
    quiz_questions: new RowBuffer('quiz_questions', {
      id: 'uuid',
      org_id: 'uuid',
      lesson_id: 'uuid',
      position: 'int',
      wording: 'text',
      options: 'text[]',
      correct_option: 'text',
    }),
  };
}

/** What writing the catalogue needs at each level: its buffers, the organisation, and the two random streams. */
interface CatalogueWriter {
  tables: ReturnType<typeof catalogueBuffers>;
  orgId: string;
  ids: Random;
  random: Random;
}

/** Writes the organisation's catalogue: programmes, courses, modules, lessons and quiz questions. */
async function writeCatalogue(db: DB, orgId: string, ids: Random, random: Random): Promise<Programme[]> {
  const writer: CatalogueWriter = { tables: catalogueBuffers(), orgId, ids, random };
  const programmes = programmeTemplates.map((template, index) => {
    const programme: Programme = { id: ids.uuid(), index, slug: template.slug, template, lessons: [], moduleTopics: [] };
    writer.tables.programmes.add(programme.id, orgId, template.slug, template.title);
    let modulePosition = 0;
    template.courses.forEach((course, courseIndex) => {
      const courseId = ids.uuid();
      writer.tables.courses.add(courseId, orgId, programme.id, courseIndex + 1, course.title);
      for (const module of course.modules) writeModule(writer, programme, courseId, module, ++modulePosition);
    });
    return programme;
  });
  for (const table of Object.values(writer.tables)) await table.flush(db);
  return programmes;
}

/** A module (numbered across the programme): its lessons, then its quiz lesson and its milestone review. */
function writeModule(writer: CatalogueWriter, programme: Programme, courseId: string, module: ModuleTemplate, position: number): void {
  const moduleId = writer.ids.uuid();
  writer.tables.modules.add(moduleId, writer.orgId, programme.id, courseId, position, module.title);
  const topic = module.title.replace(/^Module \d+ — /, '');
  programme.moduleTopics.push(topic);
  const titles = [
    ...module.lessons.map((title) => ({ title, kind: 'lesson' as const })),
    { title: `Quiz — ${topic}`, kind: 'quiz' as const },
    { title: `Bilan du module ${position}`, kind: 'milestone' as const },
  ];
  titles.forEach(({ title, kind }, lessonIndex) => {
    const { ids, random, tables } = writer;
    const lesson: Lesson = {
      id: ids.uuid(),
      index: programme.lessons.length,
      estimatedMinutes: kind === 'lesson' ? random.int(8, 25) : kind === 'quiz' ? 10 : 5,
      hasQuiz: kind === 'quiz',
      isMilestone: kind === 'milestone',
      passScore: 70,
      questions: [],
      options: [],
    };
    tables.lessons.add(
      lesson.id,
      writer.orgId,
      programme.id,
      moduleId,
      lessonIndex + 1,
      `${programme.slug}-m${position}-l${lessonIndex + 1}`,
      title,
      lesson.estimatedMinutes,
      lesson.hasQuiz,
      lesson.isMilestone,
      lesson.passScore,
    );
    if (lesson.hasQuiz) writeQuizQuestions(writer, programme.template, lesson);
    programme.lessons.push(lesson);
  });
}

/** Five to eight questions drawn from the programme's bank, each with its options in a random order. */
function writeQuizQuestions(writer: CatalogueWriter, template: ProgrammeTemplate, lesson: Lesson): void {
  const { ids, random } = writer;
  random.sample(template.questions, Math.min(template.questions.length, random.int(5, 8))).forEach((question, questionIndex) => {
    const options = random.sample(question.options, question.options.length);
    const id = ids.uuid();
    writer.tables.quiz_questions.add(id, writer.orgId, lesson.id, questionIndex + 1, question.wording, options, question.correct);
    lesson.questions.push({ id, position: questionIndex + 1, correct: question.correct });
    lesson.options.push(options);
  });
}

interface Identity {
  accountId: string;
  membershipId: string;
  name: string;
  email: string;
}

/** Names and emails of the learners, unique in the organisation and across the platform's accounts. */
async function identities(db: DB, count: number, random: Random, ids: Random, allowedDomains: string[]): Promise<Identity[]> {
  const taken = new Set<string>();
  const people = Array.from({ length: count }, () => {
    const first = random.pick(words.firstNames);
    const last = random.pick(words.lastNames);
    const domain =
      allowedDomains.length > 0
        ? random.pick(allowedDomains)
        : random.chance(0.25)
          ? random.pick(words.companyDomains)
          : random.weighted(words.mailDomains);
    return {
      accountId: ids.uuid(),
      membershipId: ids.uuid(),
      name: `${first} ${last}`,
      local: `${emailWord(first)}.${emailWord(last)}`,
      domain,
      email: '',
    };
  });
  const place = (person: (typeof people)[number]) => {
    for (let n = 1; ; n++) {
      const email = `${person.local}${n === 1 ? '' : n}@${person.domain}`;
      if (!taken.has(email)) {
        taken.add(email);
        person.email = email;
        return;
      }
    }
  };
  people.forEach(place);
  // Addresses that already have an account elsewhere on the platform get the next free number.
  for (;;) {
    const existing = new Set<string>();
    for (let start = 0; start < people.length; start += 5000) {
      const emails = people.slice(start, start + 5000).map((p) => p.email);
      const rows = await sql<{ email: string }>`select email from accounts where email = any(${emails}::text[])`.execute(db);
      for (const row of rows.rows) existing.add(row.email);
    }
    if (existing.size === 0) break;
    for (const email of existing) taken.add(email);
    people.filter((p) => existing.has(p.email)).forEach(place);
  }
  return people.map(({ accountId, membershipId, name, email }) => ({ accountId, membershipId, name, email }));
}

/** One lesson of a programme as the learner has left it so far. */
interface LessonState {
  visits: number;
  seconds: number;
  first: Date | null;
  last: Date | null;
  viewed: boolean;
  viewedAt: Date | null;
  attempts: number;
  best: number;
  rated: boolean;
}

/** A learner's way through one programme: the lessons' state, the next lesson, a quiz to retake. */
interface Course {
  programme: Programme;
  lessons: LessonState[];
  next: number;
  pendingQuiz: number | null;
}

/** One sitting at the computer: its day, its first minute, and the minutes it must end by. */
interface Sitting {
  day: number;
  /** A New Year's Eve sitting that runs past midnight (minutes beyond 24 h). */
  pastMidnight: boolean;
  start: number;
  /** The last minute a reading may end. */
  readingLimit: number;
  /** The last minute a quiz may finish. */
  quizLimit: number;
}

/** A learner's membership as drawn: its state, its dates, and how long the learner may study. */
interface Membership {
  status: 'actif' | 'invité' | 'suspendu';
  /** The programmes of a story told on purpose; null for an ordinary learner. */
  storyPlans: ProgrammePlan<Programme>[] | null;
  joinDay: number;
  invitedAt: Date | null;
  joinedAt: Date | null;
  /** The membership's first date: the invitation, else the join. */
  since: Date;
  suspendedDay: number | null;
  /** Whether the learner studies at all (never when only invited, and a few who joined never do). */
  active: boolean;
  /** Study happens on whole days before this one: the suspension, if any, else the data's end. */
  activityEnd: number;
}

/** What one learner does, from enrolment to today: every row of theirs goes to the buffers. */
class LearnerSimulation {
  private readonly studyDays = new Set<number>();
  private readonly tutoringDays = new Set<string>();
  private readonly logins: { start: Date; end: Date | null; ip: string; agent: string | null }[] = [];
  private traits: Traits = { gap: 1, skill: 0.5, dropRate: 0, labUser: false, agents: [null], ips: [] };

  constructor(
    private readonly world: World,
    private readonly person: Identity,
    private readonly story: Story,
    private readonly r: Random,
  ) {}

  /** The learner joins, enrols in a few programmes and follows each; then their account as the story left it. Draw order is fixed: same seed, same data. */
  run(): void {
    const membership = this.joinOrganisation();
    const plans = this.choosePlans(membership);
    const tutored =
      this.story === 'ordinary'
        ? plans.some((p) => p.programme.template.tutored) && this.r.chance(0.35)
        : plans.some((p) => p.programme.template.tutored);
    this.traits = this.drawTraits();
    plans.forEach((plan, order) => {
      this.followProgramme(plan, order, membership, tutored);
    });
    this.recordAccount(membership, tutored);
  }

  /** The membership's state and dates: invited, joined, perhaps suspended; a story sets the join day. */
  private joinOrganisation(): Membership {
    const { r, world } = this;
    const { calendar } = world;
    const lastDay = calendar.days - 1;
    const ordinary = this.story === 'ordinary';
    const status = ordinary
      ? r.weighted([
          ['actif', 82],
          ['invité', 10],
          ['suspendu', 8],
        ] as const)
      : 'actif';
    // A few learners of the first year; the others over the last two years, as a live platform.
    const recentFrom = calendar.dayOf(calendar.firstYear + 1, 1, 1);
    const storyPlans = this.story === 'ordinary' ? null : plannedProgrammes(this.story, calendar, world.programmes, r);
    const joinDay =
      storyPlans?.[0]?.startDay ??
      (status === 'invité'
        ? r.int(Math.max(0, lastDay - 150), lastDay)
        : r.chance(0.12)
          ? r.int(0, recentFrom - 1)
          : r.int(recentFrom, Math.max(recentFrom, lastDay - 14)));
    const invitedFirst = status === 'invité' || r.chance(0.75);
    const inviteDay = invitedFirst ? (status === 'invité' ? joinDay : Math.max(0, joinDay - r.int(0, 6))) : null;
    const inviteMinute = r.int(8 * 60, 18 * 60);
    const joinMinute = inviteDay === joinDay ? Math.min(22 * 60, inviteMinute + r.int(5, 240)) : r.int(8 * 60, 20 * 60);
    const invitedAt = inviteDay === null ? null : calendar.at(inviteDay, inviteMinute);
    const joinedAt = status === 'invité' ? null : calendar.at(joinDay, joinMinute);
    const suspendedDay = status === 'suspendu' ? Math.min(lastDay, joinDay + r.int(20, 300)) : null;
    const active = status !== 'invité' && !(ordinary && status === 'actif' && r.chance(0.04));
    return {
      status,
      storyPlans,
      joinDay,
      invitedAt,
      joinedAt,
      since: (invitedAt ?? joinedAt)!,
      suspendedDay,
      active,
      activityEnd: suspendedDay ?? calendar.days,
    };
  }

  /** The programmes the learner enrols in: the story's, else one to three by popularity, the first on the join day. */
  private choosePlans(membership: Membership): ProgrammePlan<Programme>[] {
    const { r, world } = this;
    const { joinDay, activityEnd } = membership;
    return (
      membership.storyPlans ??
      r
        .sample(
          world.programmes.flatMap((p) => Array.from({ length: p.template.popularity }, () => p)),
          20,
        )
        .filter((p, i, all) => all.indexOf(p) === i)
        .slice(
          0,
          r.weighted([
            [1, 40],
            [2, 35],
            [3, 25],
          ] as const),
        )
        .map((programme, order) => ({
          programme,
          startDay: order === 0 ? joinDay : joinDay + r.int(15, 200),
          until: activityEnd,
          pace: null,
        }))
    );
  }

  /** How the learner studies (see Traits), and their devices and addresses. */
  private drawTraits(): Traits {
    const { r } = this;
    const ordinary = this.story === 'ordinary';
    return {
      gap: r.pick([1, 2, 3, 4, 6, 9]),
      skill: 0.45 + r.next() * 0.5,
      dropRate: ordinary ? r.pick([0.003, 0.008, 0.015, 0.04]) : 0.003,
      labUser: !ordinary || r.chance(0.5),
      agents: r.sample(words.userAgents, r.int(1, 2)).map((agent) => (r.chance(0.02) ? null : agent)),
      ips: Array.from({ length: r.int(1, 3) }, () => this.ip()),
    };
  }

  /** One programme of the learner: the enrolment, the PIF, then (an active learner) study and tutoring. */
  private followProgramme(plan: ProgrammePlan<Programme>, order: number, membership: Membership, tutored: boolean): void {
    const { r, world, person } = this;
    const { programme, startDay } = plan;
    const { status, activityEnd } = membership;
    if (order > 0 && (startDay >= activityEnd - 7 || status === 'invité')) return;
    const enrolledAt = order === 0 ? membership.since : world.calendar.at(startDay, r.int(8 * 60, 19 * 60));
    world.out.programme_enrolments.add(world.ids.uuid(), world.orgId, person.membershipId, programme.id, enrolledAt);
    if (status === 'invité') return;
    this.issuePif(programme, startDay);
    if (!membership.active) return;
    const until = Math.min(plan.until, activityEnd);
    const studiedUntil = this.study(programme, plan.pace ?? this.ordinaryPace(startDay), until);
    if (tutored && programme.template.tutored) this.tutoring(programme, startDay, Math.min(studiedUntil + 1, until));
  }

  /** The PIF (individual training plan) of a programme, within days of its start, with its estimated hours. */
  private issuePif(programme: Programme, startDay: number): void {
    const { r, world, person } = this;
    const { calendar } = world;
    const pifDay = startDay + r.int(0, 2);
    if (pifDay > calendar.days - 1) return;
    const estimated = programme.lessons.reduce((sum, lesson) => sum + lesson.estimatedMinutes, 0) / 60;
    world.out.documents.add(
      world.ids.uuid(),
      world.orgId,
      person.membershipId,
      programme.id,
      'PIF',
      calendar.at(pifDay, r.int(8 * 60, 19 * 60)),
      Math.round(estimated * 2) / 2,
      null,
    );
  }

  /** The learner's logins, account, membership and licence, in the state their story left them in. */
  private recordAccount(membership: Membership, tutored: boolean): void {
    const { r, world, person } = this;
    const { calendar, out, orgId } = world;
    const { status, since, suspendedDay } = membership;
    const lastDay = calendar.days - 1;
    this.logins.sort((a, b) => a.start.getTime() - b.start.getTime());
    const firstLogin = this.logins[0]?.start ?? null;
    const last = this.logins[this.logins.length - 1];
    if (last && status === 'actif' && last.start.getTime() > calendar.at(Math.max(0, lastDay - 6), 0).getTime() && r.chance(0.2))
      last.end = null;
    for (const login of this.logins) out.logins.add(orgId, person.membershipId, login.start, login.end, login.ip, login.agent);
    const name = status === 'invité' && r.chance(0.8) ? null : person.name;
    out.accounts.add(person.accountId, person.email, name, since, firstLogin);
    out.memberships.add(
      person.membershipId,
      orgId,
      person.accountId,
      status,
      membership.invitedAt,
      membership.joinedAt,
      since,
      person.email,
      name,
    );
    const licenceStatus = status === 'suspendu' ? 'révoquée' : firstLogin ? 'activée' : 'attribuée';
    out.licences.add(
      orgId,
      tutored ? 'tutorat' : 'standard',
      licenceStatus,
      person.membershipId,
      since,
      firstLogin,
      suspendedDay === null ? null : calendar.at(suspendedDay, r.int(9 * 60, 18 * 60)),
      since,
    );
    world.licencesUsed[tutored ? 'tutorat' : 'standard']++;
  }

  private ip(): string {
    const { r } = this;
    if (r.chance(0.1)) {
      const hex = () => r.int(0, 0xffff).toString(16);
      return `2a01:cb${r.int(0, 0xff).toString(16).padStart(2, '0')}:${hex()}:${hex()}::${hex()}`;
    }
    const [a, b] = r.pick(words.ipv4Prefixes);
    return `${a}.${b + r.int(0, 63)}.${r.int(0, 255)}.${r.int(1, 254)}`;
  }

  /** A login from a minute of a day to another (past midnight when the minute is beyond 24 h). */
  private login(day: number, startMinute: number, endMinute: number): void {
    const ip = this.r.chance(0.8) ? this.traits.ips[0]! : this.r.pick(this.traits.ips);
    this.logins.push({
      start: this.world.calendar.at(day, startMinute),
      end: this.world.calendar.at(day, endMinute),
      ip,
      agent: this.r.pick(this.traits.agents),
    });
  }

  /** The ordinary learner's rhythm: a session every few days, one to three lessons each, and a risk of dropping out. */
  private ordinaryPace(startDay: number): Pace {
    const { r, traits } = this;
    return {
      first: startDay + r.int(0, 2),
      visits: () => r.int(1, 3),
      next: (day, sessions) => (r.chance(traits.dropRate * (1 + sessions / 20)) ? null : day + r.int(1, traits.gap * 2)),
    };
  }

  /** Study sessions in one programme at the pace given, until every lesson is viewed, the pace stops or `until`; returns the last day of study. */
  private study(programme: Programme, pace: Pace, until: number): number {
    const { r } = this;
    const course: Course = {
      programme,
      lessons: programme.lessons.map(() => ({
        visits: 0,
        seconds: 0,
        first: null,
        last: null,
        viewed: false,
        viewedAt: null,
        attempts: 0,
        best: -1,
        rated: false,
      })),
      next: 0,
      pendingQuiz: null,
    };
    let day: number | null = pace.first;
    let lastStudy = pace.first;
    let sessions = 0;
    while (day !== null && day < until) {
      if (this.studyDays.has(day)) {
        day++;
        continue;
      }
      this.studyDays.add(day);
      sessions++;
      lastStudy = day;
      const end = this.studySession(course, day, pace.visits(), until);
      if (course.lessons.every((s) => s.viewed)) {
        this.complete(course, day, end > dayEnd ? end + r.int(1, 10) : Math.min(dayEnd, end + r.int(1, 20)));
        return day;
      }
      day = pace.next(day, sessions);
    }
    this.lessonProgress(course);
    // Some who stop answer the survey anyway.
    if (sessions >= 3 && r.chance(0.15)) this.survey(programme, lastStudy + r.int(1, 20), until);
    return lastStudy;
  }

  /**
   * One sitting of `visits` lesson visits, with the quizzes at the end of their lesson, the AI lab
   * now and then, and the login around it all; returns the minute it ends. On New Year's Eve the
   * sitting often starts late in the evening and runs past midnight (minutes beyond 24 h).
   */
  private studySession(course: Course, day: number, visits: number, until: number): number {
    const { r } = this;
    const sitting = this.planSitting(day);
    let t = sitting.start;
    for (let visited = 0; visited < visits && t < sitting.readingLimit - 90; visited++) {
      const next = this.visitLesson(course, sitting, t, visited === 0);
      if (next === null) break;
      t = next;
    }
    const end = Math.min(sitting.quizLimit, this.useAiLab(course.programme, sitting, t) + r.int(0, 5));
    this.login(day, Math.max(0, sitting.start - r.int(0, 3)), end);
    this.perhapsQuickLogin(day + 1, until);
    return end;
  }

  /** When a sitting starts (morning, lunch, afternoon or evening; late on New Year's Eve) and the minutes it must end by. */
  private planSitting(day: number): Sitting {
    const { r } = this;
    const { calendar } = this.world;
    const pastMidnight = calendar.isNewYearsEve(day) && day + 1 < calendar.days && r.chance(this.story === 'ordinary' ? 0.5 : 1);
    const start = pastMidnight
      ? 23 * 60 + r.int(20, 40)
      : r.weighted([
          [r.int(8 * 60, 11 * 60 + 30), 35],
          [r.int(12 * 60, 13 * 60 + 30), 15],
          [r.int(14 * 60, 17 * 60 + 30), 30],
          [r.int(18 * 60, 20 * 60 + 30), 20],
        ] as const);
    const [readingLimit, quizLimit] = pastMidnight ? [24 * 60 + 75, 24 * 60 + 90] : [23 * 60 + 30, dayEnd];
    return { day, pastMidnight, start, readingLimit, quizLimit };
  }

  /**
   * One lesson visit from minute `t`: the reading, the quiz at its end, perhaps the milestone's
   * rating, and the course time; returns the minute the next visit may start, or null when the
   * sitting stops here (no lesson left, or the reading would end past the limit).
   */
  private visitLesson(course: Course, sitting: Sitting, t: number, firstOfSitting: boolean): number | null {
    const { r } = this;
    const lessons = course.programme.lessons;
    // The quiz left to retake first, else mostly the next lesson, now and then one seen before.
    const index: number = course.pendingQuiz ?? (r.chance(0.15) && course.next > 0 ? r.int(0, course.next - 1) : course.next);
    if (index >= lessons.length) return null;
    const { pieces, end: readingEnd } = this.readLesson(lessons[index]!, sitting, t, firstOfSitting);
    if (readingEnd > sitting.readingLimit) return null;
    const state = course.lessons[index]!;
    const visitStart = this.world.calendar.at(sitting.day, t);
    state.visits++;
    state.first ??= visitStart;
    state.last = visitStart;
    if (!state.viewed && r.chance(0.93)) {
      state.viewed = true;
      state.viewedAt = visitStart;
    }
    const clock = this.takeQuiz(course, index, sitting, readingEnd);
    this.rateMilestone(course, index, sitting.day, clock);
    this.recordCourseTime(course, index, sitting.day, pieces, clock);
    while (course.next < lessons.length && course.lessons[course.next]!.viewed) course.next++;
    return clock + r.int(0, 4);
  }

  /**
   * The reading of a lesson from minute `t`: one to five stretches of activity with idle pauses
   * between them. Past midnight, the sitting's first reading is long enough to cross it.
   */
  private readLesson(lesson: Lesson, sitting: Sitting, t: number, firstOfSitting: boolean): { pieces: [number, number][]; end: number } {
    const { r } = this;
    const reading = Math.max(
      sitting.pastMidnight && firstOfSitting ? 24 * 60 - t + r.int(8, 25) : 3,
      Math.round(lesson.estimatedMinutes * (0.6 + r.next() * 1.2)),
    );
    const stretches = reading >= 8 ? r.int(1, Math.min(5, Math.floor(reading / 4))) : 1;
    const pieces: [number, number][] = [];
    let clock = t;
    for (let piece = 0, left = reading; piece < stretches; piece++) {
      const length = piece === stretches - 1 ? left : Math.max(2, Math.round((left / (stretches - piece)) * (0.6 + r.next() * 0.8)));
      pieces.push([clock, clock + length]);
      left -= length;
      clock += length + (piece < stretches - 1 ? r.int(1, 4) : 0);
    }
    return { pieces, end: clock };
  }

  /**
   * The quiz at the end of a visit, when the lesson has one not yet passed (four attempts at most):
   * a failed attempt is retried at once, or left for the next sitting. Returns the minute the
   * visit's quizzing ends (`clock` when there is none).
   */
  private takeQuiz(course: Course, index: number, sitting: Sitting, clock: number): number {
    const { r } = this;
    const lesson = course.programme.lessons[index]!;
    const state = course.lessons[index]!;
    if (!(lesson.hasQuiz && state.viewed && state.best < lesson.passScore && state.attempts < 4)) {
      if (course.pendingQuiz === index) course.pendingQuiz = null;
      return clock;
    }
    course.pendingQuiz = null;
    for (;;) {
      const questions = lesson.questions.length;
      if (clock + questions + 1 > sitting.quizLimit) break;
      const attemptNo = ++state.attempts;
      const startOfQuiz = clock;
      clock += questions + 1;
      const score = this.quizAttempt(course.programme, lesson, sitting.day, attemptNo, startOfQuiz, clock);
      state.best = Math.max(state.best, score);
      if (score >= lesson.passScore || state.attempts >= 4) break;
      if (!r.chance(0.5)) {
        course.pendingQuiz = index;
        break;
      }
      clock += r.int(1, 4);
    }
    return clock;
  }

  /** One attempt from minute `start` to `end`: an answer a minute (right more often at each attempt), then the score; returns it. */
  private quizAttempt(programme: Programme, lesson: Lesson, day: number, attemptNo: number, start: number, end: number): number {
    const { r, world, person, traits } = this;
    const { calendar, out, orgId } = world;
    const attemptId = world.ids.uuid();
    let correct = 0;
    const answers = lesson.questions.map((question, q) => {
      const right = r.chance(Math.min(0.97, traits.skill + 0.08 * (attemptNo - 1)));
      if (right) correct++;
      const options = lesson.options[q]!;
      const chosen = right ? question.correct : r.pick(options.filter((o) => o !== question.correct));
      return { question, chosen, right, at: calendar.at(day, start + q + 1) };
    });
    const questions = lesson.questions.length;
    const score = questions === 0 ? 100 : Math.round((100 * correct) / questions);
    const passed = score >= lesson.passScore;
    for (const { question, chosen, right, at } of answers) {
      out.quiz_answers.add(
        orgId,
        attemptId,
        question.id,
        question.position,
        chosen,
        right,
        at,
        person.membershipId,
        programme.id,
        attemptNo,
        calendar.dateAt(day, end),
        lesson.id,
        score,
        passed,
      );
    }
    out.quiz_attempts.add(attemptId, orgId, person.membershipId, programme.id, lesson.id, attemptNo, score, passed, calendar.at(day, end));
    return score;
  }

  /** A milestone lesson, once viewed, is rated now and then (once at most), at the end of the visit. */
  private rateMilestone(course: Course, index: number, day: number, minute: number): void {
    const { r, world, person } = this;
    const lesson = course.programme.lessons[index]!;
    const state = course.lessons[index]!;
    if (!(lesson.isMilestone && state.viewed && !state.rated && r.chance(0.45))) return;
    state.rated = true;
    world.out.lesson_ratings.add(
      world.ids.uuid(),
      world.orgId,
      person.membershipId,
      course.programme.id,
      lesson.id,
      r.weighted([
        [5, 40],
        [4, 38],
        [3, 15],
        [2, 5],
        [1, 2],
      ] as const),
      r.chance(0.3) ? r.pick(words.lessonComments) : null,
      world.calendar.at(day, minute),
    );
  }

  /** The course intervals of a visit: its reading stretches, the last one running on to `end` (the quiz); the first opens the visit. */
  private recordCourseTime(course: Course, index: number, day: number, pieces: [number, number][], end: number): void {
    const { world, person } = this;
    const state = course.lessons[index]!;
    pieces[pieces.length - 1]![1] = end;
    pieces.forEach(([from, to], piece) => {
      state.seconds += (to - from) * 60;
      world.out.activity_intervals.add(
        world.orgId,
        person.membershipId,
        'cours',
        world.calendar.at(day, from),
        world.calendar.at(day, to),
        course.programme.id,
        course.programme.lessons[index]!.id,
        null,
        piece === 0,
      );
    });
  }

  /**
   * The AI lab, opened now and then during the sitting's course time (always past midnight): its
   * interval overlaps the course ones, and on New Year's Eve stays open past midnight. Returns the
   * minute the sitting's activity ends, the lab's end when later than `t`.
   */
  private useAiLab(programme: Programme, sitting: Sitting, t: number): number {
    const { r, world, person, traits } = this;
    const { start, pastMidnight } = sitting;
    if (!(traits.labUser && (pastMidnight || r.chance(0.4)) && t > start)) return t;
    const labStart = r.int(start, Math.max(start, t - 3));
    const labEnd = pastMidnight
      ? Math.max(labStart + 5, Math.min(sitting.quizLimit - 2, 24 * 60 + r.int(5, 30)))
      : Math.min(dayEnd - 2, labStart + r.int(5, 45));
    world.out.activity_intervals.add(
      world.orgId,
      person.membershipId,
      'labia',
      world.calendar.at(sitting.day, labStart),
      world.calendar.at(sitting.day, labEnd),
      programme.id,
      null,
      null,
      false,
    );
    return Math.max(t, labEnd);
  }

  /** Now and then a short login without study on `day` (checking a date, a document), when it is free and before `until`. */
  private perhapsQuickLogin(day: number, until: number): void {
    const { r } = this;
    if (!(r.chance(0.3) && day < until && !this.studyDays.has(day))) return;
    this.studyDays.add(day);
    const quick = r.int(8 * 60, 21 * 60);
    this.login(day, quick, quick + r.int(1, 8));
  }

  private lessonProgress(course: Course): void {
    const { world, person } = this;
    course.lessons.forEach((s, index) => {
      if (s.visits === 0) return;
      world.out.lesson_progress.add(
        world.orgId,
        person.membershipId,
        course.programme.id,
        course.programme.lessons[index]!.id,
        s.viewed,
        s.viewedAt,
        s.visits,
        s.seconds,
        s.first,
        s.last,
      );
    });
  }

  /** Every lesson viewed: the certificate (at a minute of `day`, past midnight beyond 24 h), then perhaps the satisfaction survey. */
  private complete(course: Course, day: number, minute: number): void {
    const { r, world, person } = this;
    const { programme } = course;
    this.lessonProgress(course);
    const quizzes = programme.lessons.filter((lesson) => lesson.hasQuiz).map((lesson) => Math.max(0, course.lessons[lesson.index]!.best));
    const score = quizzes.length === 0 ? 100 : Math.round(quizzes.reduce((a, b) => a + b, 0) / quizzes.length);
    const hours = Math.round(course.lessons.reduce((sum, s) => sum + s.seconds, 0) / 360) / 10;
    world.out.documents.add(
      world.ids.uuid(),
      world.orgId,
      person.membershipId,
      programme.id,
      'Attestation',
      world.calendar.at(day, minute),
      hours,
      score,
    );
    if (r.chance(0.7)) this.survey(programme, day + r.int(0, 10), world.calendar.days);
  }

  private survey(programme: Programme, day: number, limit: number): void {
    const { r, world, person } = this;
    if (day >= Math.min(limit, world.calendar.days)) return;
    const rating = r.weighted([
      [5, 45],
      [4, 35],
      [3, 13],
      [2, 5],
      [1, 2],
    ] as const);
    const nps = Math.min(10, Math.max(0, [0, 2, 4, 6, 8, 9][rating]! + r.int(-1, 1) + (rating === 5 ? r.int(0, 1) : 0)));
    world.out.satisfaction_surveys.add(
      world.ids.uuid(),
      world.orgId,
      person.membershipId,
      programme.id,
      rating,
      nps,
      r.chance(0.55) ? r.pick(words.surveyVerbatims) : null,
      world.calendar.at(day, r.int(8 * 60, 21 * 60)),
    );
  }

  /**
   * Fortnightly tutoring workshops of the programme while the learner follows it, and the evening
   * workshop of New Year's Eve, which ends past midnight (its attendance and connected time belong
   * to the year it started in).
   */
  private tutoring(programme: Programme, fromDay: number, untilDay: number): void {
    const { calendar } = this.world;
    // Even programmes meet on Tuesdays at 14:00 for 90 minutes, odd ones on Thursdays at 18:00 for 60.
    const weekday = programme.index % 2 === 0 ? 1 : 3;
    const [minute, planned] = programme.index % 2 === 0 ? [14 * 60, 90] : [18 * 60, 60];
    let day = fromDay + 1;
    while (day < untilDay && calendar.weekday(day) !== weekday) day++;
    for (; day < untilDay; day += 14) this.attend(programme, day, minute, planned, null);
    for (let eve = fromDay + 1; eve < untilDay; eve++) {
      if (calendar.isNewYearsEve(eve) && eve + 1 < calendar.days && this.r.chance(this.story === 'ordinary' ? 0.5 : 1)) {
        this.attend(programme, eve, 23 * 60, 90, 'Veillée de fin d’année');
      }
    }
  }

  /** Attendance of one workshop: present or not, connected time, signatures, perhaps a rating. */
  private attend(programme: Programme, day: number, minute: number, planned: number, topic: string | null): void {
    const { r, world, person } = this;
    const { calendar, out, orgId } = world;
    if (this.tutoringDays.has(`${day}:${minute}`)) return;
    this.tutoringDays.add(`${day}:${minute}`);
    const session = world.session(programme, day, minute, planned, topic);
    const sessionId = session.id;
    const present = r.chance(0.85);
    const late = present ? r.int(0, 10) : 0;
    const connected = present ? Math.max(15, planned - late - r.int(0, 10)) : 0;
    const attendanceId = world.ids.uuid();
    out.tutoring_attendance.add(
      attendanceId,
      orgId,
      sessionId,
      person.membershipId,
      present,
      connected,
      present && r.chance(0.92),
      present && r.chance(0.97),
      session.startsAt,
      session.title,
      session.programmeId,
      person.email,
    );
    if (!present) return;
    // The tutoring interval is exactly the connected time, so temps_tutorat_min fits in temps_actif_min.
    out.activity_intervals.add(
      orgId,
      person.membershipId,
      'tutorat',
      calendar.at(day, minute + late),
      calendar.at(day, minute + late + connected),
      programme.id,
      null,
      attendanceId,
      false,
    );
    if (!this.studyDays.has(day)) this.login(day, minute + late - r.int(0, 3), minute + late + connected + r.int(0, 3));
    if (r.chance(0.5)) this.rateWorkshop(sessionId, day, minute + planned);
  }

  /** A rating of the workshop ended at `endMinute`, within hours; legacy imports have no session rating. */
  private rateWorkshop(sessionId: string, day: number, endMinute: number): void {
    const { r, world, person } = this;
    const legacy = day < world.legacyUntilDay;
    world.out.tutoring_ratings.add(
      world.ids.uuid(),
      world.orgId,
      person.membershipId,
      sessionId,
      legacy
        ? null
        : r.weighted([
            [5, 45],
            [4, 35],
            [3, 14],
            [2, 4],
            [1, 2],
          ] as const),
      r.weighted([
        [5, 50],
        [4, 33],
        [3, 12],
        [2, 3],
        [1, 2],
      ] as const),
      r.chance(0.35) ? r.pick(words.tutoringComments) : null,
      world.calendar.at(day, Math.max(endMinute + 5, Math.min(dayEnd, endMinute + r.int(5, 240)))),
    );
  }
}

/** What the simulations share: the calendar, the catalogue, the buffers and the tutoring groups. */
class World {
  readonly licencesUsed = { standard: 0, tutorat: 0 };
  /** Ratings of sessions before this day are legacy imports, without a session rating. */
  readonly legacyUntilDay: number;
  private readonly sessions = new Map<string, SessionSlot[]>();

  constructor(
    readonly orgId: string,
    readonly calendar: ParisCalendar,
    readonly programmes: Programme[],
    readonly out: Buffers,
    readonly ids: Random,
  ) {
    this.legacyUntilDay = calendar.dayOf(calendar.firstYear + 1, 1, 1) + 120;
  }

  /** A workshop group of the programme at that time with a free seat (groups of twelve); `topic` by default follows the fortnight. */
  session(programme: Programme, day: number, minute: number, planned: number, topic: string | null): SessionSlot {
    const key = `${programme.index}:${day}:${minute}`;
    const groups = this.sessions.get(key) ?? [];
    this.sessions.set(key, groups);
    let group = groups.find((g) => g.attendees < 12);
    if (!group) {
      const id = this.ids.uuid();
      const topicTitle = topic ?? programme.moduleTopics[Math.floor(day / 14) % programme.moduleTopics.length]!;
      const number = groups.length + 1;
      group = {
        id,
        attendees: 0,
        startsAt: this.calendar.at(day, minute),
        title: `Atelier tutoré — ${topicTitle}${number > 1 ? ` (groupe ${number})` : ''}`,
        programmeId: programme.id,
      };
      groups.push(group);
      this.out.tutoring_sessions.add(
        group.id,
        this.orgId,
        group.programmeId,
        group.title,
        group.startsAt,
        planned,
        trainerNames[(programme.index * 3 + number) % trainerNames.length],
      );
    }
    group.attendees++;
    return group;
  }
}

/**
 * Bulk loading skips row triggers (foreign-key checks, the enrolment-summary trigger) when the
 * database role may do so (superuser: the embedded PostgreSQL): the generator writes consistent
 * rows by construction, and the summaries are then computed once. Otherwise everything is checked.
 */
async function skipTriggersIfAllowed(trx: DB): Promise<boolean> {
  const role = await sql<{ superuser: boolean }>`select rolsuper as superuser from pg_roles where rolname = current_user`.execute(trx);
  if (!role.rows[0]?.superuser) return false;
  await sql`set local session_replication_role = replica`.execute(trx);
  return true;
}

/**
 * What the triggers maintain, for a whole organisation at once: the enrolment summaries, the year
 * slices of lessons and enrolments (in that order: enrolment years read lesson years), the counts
 * `progress` pages on, and the learners' figures of each year (which read both slices).
 */
async function refreshTriggerMaintainedRows(trx: DB, orgId: string): Promise<void> {
  await sql`update programme_enrolments pe
    set lessons_viewed = s.viewed, first_visit_at = s.first_visit, last_visit_at = s.last_visit
    from (
      select membership_id, programme_id, count(*) filter (where viewed)::int as viewed, min(first_visit_at) as first_visit, max(last_visit_at) as last_visit
      from lesson_progress where org_id = ${orgId} group by membership_id, programme_id
    ) s
    where pe.membership_id = s.membership_id and pe.programme_id = s.programme_id`.execute(trx);
  await sql`select lesson_progress_years_recount(${orgId})`.execute(trx);
  await sql`select enrolment_years_recount(${orgId})`.execute(trx);
  await sql`select lesson_progress_counts_recount(${orgId})`.execute(trx);
  await sql`select learner_years_recount(${orgId})`.execute(trx);
  await sql`set local session_replication_role = origin`.execute(trx);
}

const flushOrder: (keyof Buffers)[] = [
  'accounts',
  'memberships',
  'licences',
  'programme_enrolments',
  'tutoring_sessions',
  'tutoring_attendance',
  'activity_intervals',
  'logins',
  'lesson_progress',
  'quiz_attempts',
  'quiz_answers',
  'documents',
  'satisfaction_surveys',
  'tutoring_ratings',
  'lesson_ratings',
];

/**
 * The generator refuses the organisation: unknown, already seeded, or a year that has not begun.
 * An operator's mistake, not a fault: the seed command prints the (French) message as is.
 */
export class SeedRefused extends Error {
  override name = 'SeedRefused';
}

/**
 * Seeds an organisation with `learners` learners and three calendar years of learning data (most
 * of it in the last two, and the year-boundary stories told on purpose, see stories.ts): the
 * catalogue, accounts, memberships and licences in every state, and what each learner did. One
 * transaction; rows are written in bulk. Historical data: no webhook event is recorded.
 */
export async function seedOrganisation(db: DB, options: SeedOptions): Promise<SeedResult> {
  const seed = options.seed ?? 1;
  const now = options.now ?? new Date();
  const year = options.year ?? currentParisYear(now);
  const organisation = await findOrganisation(db, options.orgId);
  if (!organisation) throw new SeedRefused(`Aucune organisation ${options.orgId}.`);
  const until = new Date(Math.min(now.getTime(), Date.UTC(year + 1, 0, 1) - 3600_000));
  const calendar = new ParisCalendar(year - 2, until);
  if (calendar.dayOf(year, 1, 1) >= calendar.days) throw new SeedRefused(`L’année ${year} commence dans le futur : rien à générer.`);
  await refuseIfSeeded(db, organisation.id);

  const root = new Random(seed);
  const ids = new Random(hashText(`${seed}:${organisation.id}`));
  return db.transaction().execute(async (trx) => {
    const fastLoad = await skipTriggersIfAllowed(trx);
    const programmes = await writeCatalogue(trx, organisation.id, ids, root.fork());
    const people = await identities(trx, options.learners, root.fork(), ids, organisation.allowed_email_domains);
    const world = new World(organisation.id, calendar, programmes, buffers(), ids);
    await simulateLearners(trx, world, people, root, options.onProgress);
    await analyze(trx, loadedTables);
    if (fastLoad) await refreshTriggerMaintainedRows(trx, organisation.id);
    await addSpareLicences(trx, organisation.id, world.licencesUsed);
    await analyze(trx, ['licences', ...maintainedTables]);
    return {
      org: organisation.id,
      learners: people.length,
      seed,
      programmes: programmes.map((p) => p.slug),
      from: `${year - 2}-01-01`,
      to: formatParisDate(calendar.at(calendar.days - 1, 12 * 60)),
      rows: Object.fromEntries(flushOrder.map((name) => [name, world.out[name].taken])),
    };
  });
}

/** The generated programmes are already there: the organisation was seeded before. */
async function refuseIfSeeded(db: DB, orgId: string): Promise<void> {
  const existing = await db
    .selectFrom('programmes')
    .select('slug')
    .where('org_id', '=', orgId)
    .where(
      'slug',
      'in',
      programmeTemplates.map((p) => p.slug),
    )
    .execute();
  if (existing.length > 0)
    throw new SeedRefused(
      `L’organisation a déjà les programmes générés (${existing.map((p) => p.slug).join(', ')}) : elle a déjà été peuplée.`,
    );
}

/**
 * Every learner's simulation, in batches of `learnersPerBatch`: the database writes one batch while
 * the next one is generated.
 */
async function simulateLearners(
  trx: DB,
  world: World,
  people: Identity[],
  root: Random,
  onProgress: SeedOptions['onProgress'],
): Promise<void> {
  const { out } = world;
  const learnerSeeds = root.fork();
  const stories = root.fork();
  let written = 0;
  let writing: Promise<void> = Promise.resolve();
  for (let i = 0; i < people.length; i++) {
    new LearnerSimulation(world, people[i]!, storyOf(i, stories), learnerSeeds.fork()).run();
    if ((i + 1) % learnersPerBatch === 0 || i === people.length - 1) {
      const batches = flushOrder.map((name) => out[name].take());
      const done = i + 1;
      await writing;
      writing = (async () => {
        for (const batch of batches) written += await writeBatch(trx, batch);
        onProgress?.(done, written);
      })();
    }
    // Let the pending statements of the previous batch go out between learners.
    if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve));
  }
  await writing;
}

/** The tables the generator writes, and those the triggers keep from them. */
const loadedTables = [...Object.keys(catalogueBuffers()), ...flushOrder];
const maintainedTables = ['lesson_progress_years', 'enrolment_years', 'lesson_progress_days', 'lesson_progress_months', 'learner_years'];

/**
 * Statistics of tables just loaded, in the load's transaction (ANALYZE counts its own transaction's
 * rows), as PostgreSQL advises after a bulk load: first the generated rows, which the upkeep of the
 * derived tables reads (planned without them, learner_years_recount ran for minutes on a new
 * database), then the derived tables. Until autovacuum gathers them, the planner would take an
 * organisation that holds most of a table for one that holds nothing.
 */
async function analyze(trx: DB, tables: string[]): Promise<void> {
  await sql`analyze ${sql.join(tables.map((table) => sql.table(table)))}`.execute(trx);
}

/** Spare licences of each type, never assigned: a twentieth of those used, at least one. */
async function addSpareLicences(trx: DB, orgId: string, used: World['licencesUsed']): Promise<void> {
  for (const [type, count] of Object.entries(used)) {
    await sql`insert into licences (org_id, type) select ${orgId}, ${type} from generate_series(1, ${Math.max(1, Math.ceil(count * 0.05))})`.execute(
      trx,
    );
  }
}
