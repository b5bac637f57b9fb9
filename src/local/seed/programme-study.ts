import { dayEnd } from './calendar';
import type { Lesson, Programme } from './organisation-catalogue';
import type { Learner } from './simulation-state';
import type { Pace } from './stories';
import * as words from './vocabulary';

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

/** The learner's study of one programme (see `ProgrammeStudy.study`); returns the last day of study. */
export function studyProgramme(learner: Learner, programme: Programme, pace: Pace, until: number): number {
  return new ProgrammeStudy(learner).study(programme, pace, until);
}

/** How a learner studies a programme: sittings of lesson visits, quizzes, ratings, the AI lab, then the certificate and the survey. */
class ProgrammeStudy {
  constructor(private readonly learner: Learner) {}

  /** Study sessions in one programme at the pace given, until every lesson is viewed, the pace stops or `until`; returns the last day of study. */
  study(programme: Programme, pace: Pace, until: number): number {
    const { r } = this.learner;
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
      if (this.learner.studyDays.has(day)) {
        day++;
        continue;
      }
      this.learner.studyDays.add(day);
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
    const { r } = this.learner;
    const sitting = this.planSitting(day);
    let t = sitting.start;
    for (let visited = 0; visited < visits && t < sitting.readingLimit - 90; visited++) {
      const next = this.visitLesson(course, sitting, t, visited === 0);
      if (next === null) break;
      t = next;
    }
    const end = Math.min(sitting.quizLimit, this.useAiLab(course.programme, sitting, t) + r.int(0, 5));
    this.learner.login(day, Math.max(0, sitting.start - r.int(0, 3)), end);
    this.learner.perhapsQuickLogin(day + 1, until);
    return end;
  }

  /** When a sitting starts (morning, lunch, afternoon or evening; late on New Year's Eve) and the minutes it must end by. */
  private planSitting(day: number): Sitting {
    const { r } = this.learner;
    const { calendar } = this.learner.world;
    const pastMidnight = calendar.isNewYearsEve(day) && day + 1 < calendar.days && r.chance(this.learner.story === 'ordinary' ? 0.5 : 1);
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
    const { r } = this.learner;
    const lessons = course.programme.lessons;
    // The quiz left to retake first, else mostly the next lesson, now and then one seen before.
    const index: number = course.pendingQuiz ?? (r.chance(0.15) && course.next > 0 ? r.int(0, course.next - 1) : course.next);
    if (index >= lessons.length) return null;
    const { pieces, end: readingEnd } = this.readLesson(lessons[index]!, sitting, t, firstOfSitting);
    if (readingEnd > sitting.readingLimit) return null;
    const state = course.lessons[index]!;
    const visitStart = this.learner.world.calendar.at(sitting.day, t);
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
    const { r } = this.learner;
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
    const { r } = this.learner;
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
    const { r, world, person, traits } = this.learner;
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
    const { r, world, person } = this.learner;
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
    const { world, person } = this.learner;
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
    const { r, world, person, traits } = this.learner;
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

  private lessonProgress(course: Course): void {
    const { world, person } = this.learner;
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
    const { r, world, person } = this.learner;
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
    const { r, world, person } = this.learner;
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
}
