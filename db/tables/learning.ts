import type { ColumnType, Generated } from 'kysely';

/** Timestamps: written as Date or text, read back as Date. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamp the database fills in when it is not given. */
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** bigint identity keys: numbers once read (pg int8 parser), never written. */
type IdentityKey = ColumnType<number, never, never>;

export type ActivityKind = 'cours' | 'labia' | 'tutorat';
export type DocumentType = 'PIF' | 'Attestation';

export interface ProgrammesTable {
  id: Generated<string>;
  org_id: string;
  slug: string;
  title: string;
  created_at: GeneratedTimestamp;
}

/**
 * A learner in a programme. `lessons_viewed`, `first_visit_at` and `last_visit_at` (lifetime) are
 * maintained by a trigger on lesson_progress: never write them. Its state year by year is in
 * enrolment_years.
 */
export interface ProgrammeEnrolmentsTable {
  id: Generated<string>;
  org_id: string;
  membership_id: string;
  programme_id: string;
  enrolled_at: GeneratedTimestamp;
  lessons_viewed: ColumnType<number, never, never>;
  first_visit_at: ColumnType<Date | null, never, never>;
  last_visit_at: ColumnType<Date | null, never, never>;
}

export interface CoursesTable {
  id: Generated<string>;
  org_id: string;
  programme_id: string;
  position: number;
  title: string;
}

export interface ModulesTable {
  id: Generated<string>;
  org_id: string;
  programme_id: string;
  course_id: string;
  /** Order of the module within the programme. */
  position: number;
  title: string;
}

export interface LessonsTable {
  id: Generated<string>;
  org_id: string;
  programme_id: string;
  module_id: string;
  /** Order of the lesson within its module. */
  position: number;
  /** Stable key of the lesson (webhook events). */
  key: string;
  title: string;
  estimated_minutes: Generated<number>;
  has_quiz: Generated<boolean>;
  /** A milestone / module-end lesson, which learners may rate. */
  is_milestone: Generated<boolean>;
  pass_score: Generated<number>;
}

export interface QuizQuestionsTable {
  id: Generated<string>;
  org_id: string;
  lesson_id: string;
  position: number;
  wording: string;
  options: string[];
  correct_option: string;
}

/**
 * One row per lesson a learner opened, over the learner's whole time on it; (membership, programme)
 * must be an enrolment. `viewed_at` is the start of the visit in which the lesson became viewed
 * (set exactly when `viewed` is). Its year-by-year slices are in lesson_progress_years.
 */
export interface LessonProgressTable {
  id: IdentityKey;
  org_id: string;
  membership_id: string;
  programme_id: string;
  lesson_id: string;
  viewed: Generated<boolean>;
  viewed_at: Date | string | null;
  visits: Generated<number>;
  active_seconds: Generated<number>;
  first_visit_at: Timestamp;
  last_visit_at: Timestamp;
}

/**
 * A learner's lesson in one Paris year with activity on it, derived by triggers from the course
 * intervals (never write it): the visits opened that year, the minutes of that year (intervals cut
 * at midnight on 31 December, counted between whole minutes) and the last visit opened that year,
 * or 1 January at midnight when the year only holds the end of a visit opened the year before.
 */
export interface LessonProgressYearsTable {
  org_id: ColumnType<string, never, never>;
  membership_id: ColumnType<string, never, never>;
  programme_id: ColumnType<string, never, never>;
  lesson_id: ColumnType<string, never, never>;
  year: ColumnType<number, never, never>;
  visits: ColumnType<number, never, never>;
  active_minutes: ColumnType<number, never, never>;
  last_visit_at: ColumnType<Date, never, never>;
}

/**
 * lesson_progress_years rows counted per Paris day (lesson_progress_days) or month
 * (lesson_progress_months) of their last visit, kept by triggers (`progress` sums them): never
 * write them.
 */
export interface LessonProgressCountsTable {
  org_id: ColumnType<string, never, never>;
  programme_id: ColumnType<string, never, never>;
  lesson_id: ColumnType<string, never, never>;
  /** The day, or the first day of the month. */
  period: ColumnType<string, never, never>;
  progress_rows: ColumnType<number, never, never>;
}

/**
 * An enrolment in one Paris year in which it is active (its enrolment year, or a year with lesson
 * time, a quiz attempt, a tutoring session or a document of the programme), with its state at the
 * end of that year; derived by triggers from those facts (never write it).
 */
export interface EnrolmentYearsTable {
  membership_id: ColumnType<string, never, never>;
  programme_id: ColumnType<string, never, never>;
  year: ColumnType<number, never, never>;
  enrolment_id: ColumnType<string, never, never>;
  org_id: ColumnType<string, never, never>;
  /** The last activity up to the end of the year, else the enrolment: the `enrollments` natural date. */
  natural_at: ColumnType<Date, never, never>;
  last_activity_at: ColumnType<Date | null, never, never>;
  /** The last lesson visit opened up to the end of the year. */
  last_visit_at: ColumnType<Date | null, never, never>;
  /** Lessons viewed by the end of the year. */
  lessons_viewed: ColumnType<number, never, never>;
}

/**
 * A learner's figures of one Paris year with any activity (the `learners` row of that year), kept by
 * triggers from the facts the detail resources list (never write it). A year without a row is a
 * year of zeros, without a score or a survey.
 */
export interface LearnerYearsTable {
  membership_id: ColumnType<string, never, never>;
  year: ColumnType<number, never, never>;
  org_id: ColumnType<string, never, never>;
  logins: ColumnType<number, never, never>;
  active_minutes: ColumnType<number, never, never>;
  course_minutes: ColumnType<number, never, never>;
  lab_minutes: ColumnType<number, never, never>;
  tutoring_minutes: ColumnType<number, never, never>;
  programmes_followed: ColumnType<number, never, never>;
  programmes_completed: ColumnType<number, never, never>;
  evaluations_passed: ColumnType<number, never, never>;
  evaluations_total: ColumnType<number, never, never>;
  /** The rounded mean score of the passed attempts; null without one. */
  mean_score: ColumnType<number | null, never, never>;
  tutoring_sessions: ColumnType<number, never, never>;
  sessions_present: ColumnType<number, never, never>;
  pif_issued: ColumnType<number, never, never>;
  certificates_issued: ColumnType<number, never, never>;
  /** The year's last survey; null without one. */
  satisfaction_rating: ColumnType<number | null, never, never>;
  satisfaction_nps: ColumnType<number | null, never, never>;
}

export interface TutoringSessionsTable {
  id: Generated<string>;
  org_id: string;
  programme_id: string | null;
  title: string;
  starts_at: Timestamp;
  planned_minutes: number;
  trainer_name: string;
}

export interface TutoringAttendanceTable {
  id: Generated<string>;
  org_id: string;
  session_id: string;
  membership_id: string;
  present: boolean;
  /** 0 when absent; a present learner also gets a `tutorat` activity interval this long. */
  connected_minutes: Generated<number>;
  signed_by_learner: Generated<boolean>;
  signed_by_trainer: Generated<boolean>;
  /** Copied from the session and the learner by triggers (`attendance` is ordered on them): never write them. */
  session_starts_at: ColumnType<Date, Date | string | undefined, never>;
  session_title: ColumnType<string, string | undefined, never>;
  session_programme_id: ColumnType<string | null, string | null | undefined, never>;
  email: ColumnType<string, string | undefined, never>;
}

/**
 * A span of activity (at most one day long); `attendance_id` for the tutoring kind. A lesson visit
 * is one or more course spans on its lesson, the first of which `opens_visit`; a learner's course
 * spans never overlap (one lesson at a time), so their minutes add up to no more than the union.
 */
export interface ActivityIntervalsTable {
  id: IdentityKey;
  org_id: string;
  membership_id: string;
  kind: ActivityKind;
  started_at: Timestamp;
  ended_at: Timestamp;
  programme_id: string | null;
  lesson_id: string | null;
  attendance_id: string | null;
  opens_visit: Generated<boolean>;
}

export interface LoginsTable {
  id: IdentityKey;
  org_id: string;
  membership_id: string;
  started_at: Timestamp;
  /** Null while the session is open. */
  ended_at: Timestamp | null;
  /** inet: IPv4 or IPv6 text. */
  ip: string;
  user_agent: string | null;
}

export interface QuizAttemptsTable {
  id: Generated<string>;
  org_id: string;
  membership_id: string;
  programme_id: string;
  lesson_id: string;
  /** 1 for the learner's first attempt at this lesson's quiz. */
  attempt_no: number;
  score: number;
  passed: boolean;
  completed_at: Timestamp;
  /** Generated: the Paris day of completed_at, 'YYYY-MM-DD'. */
  completed_day: ColumnType<string, never, never>;
}

export interface QuizAnswersTable {
  id: IdentityKey;
  org_id: string;
  attempt_id: string;
  question_id: string;
  /** The question's position in the quiz (copied from quiz_questions.position). */
  position: number;
  /** Copied from the attempt by a trigger (quiz-answers pages on one index): never write them. */
  membership_id: ColumnType<string, string | undefined, never>;
  programme_id: ColumnType<string, string | undefined, never>;
  attempt_no: ColumnType<number, number | undefined, never>;
  /** The attempt's Paris day, 'YYYY-MM-DD'. */
  attempt_day: ColumnType<string, string | undefined, never>;
  lesson_id: ColumnType<string, string | undefined, never>;
  attempt_score: ColumnType<number, number | undefined, never>;
  attempt_passed: ColumnType<boolean, boolean | undefined, never>;
  chosen_option: string;
  is_correct: boolean;
  answered_at: Timestamp;
}

export interface DocumentsTable {
  id: Generated<string>;
  org_id: string;
  membership_id: string;
  programme_id: string;
  type: DocumentType;
  issued_at: Timestamp;
  /** numeric(6,1): estimated (PIF) or measured (certificate) hours. */
  hours: number;
  /** Certificates only; null for a PIF. */
  completion_score: number | null;
}

export interface SatisfactionSurveysTable {
  id: Generated<string>;
  org_id: string;
  membership_id: string;
  programme_id: string;
  rating: number;
  nps: number;
  verbatim: string | null;
  answered_at: Timestamp;
}

export interface TutoringRatingsTable {
  id: Generated<string>;
  org_id: string;
  membership_id: string;
  session_id: string;
  /** Null for legacy imports. */
  session_rating: number | null;
  trainer_rating: number;
  comment: string | null;
  submitted_at: Timestamp;
}

export interface LessonRatingsTable {
  id: Generated<string>;
  org_id: string;
  membership_id: string;
  programme_id: string;
  lesson_id: string;
  rating: number;
  comment: string | null;
  submitted_at: Timestamp;
}

/** Tables of the learning data: programmes and what learners do in them. */
export interface LearningTables {
  programmes: ProgrammesTable;
  programme_enrolments: ProgrammeEnrolmentsTable;
  courses: CoursesTable;
  modules: ModulesTable;
  lessons: LessonsTable;
  quiz_questions: QuizQuestionsTable;
  lesson_progress: LessonProgressTable;
  lesson_progress_years: LessonProgressYearsTable;
  enrolment_years: EnrolmentYearsTable;
  learner_years: LearnerYearsTable;
  lesson_progress_days: LessonProgressCountsTable;
  lesson_progress_months: LessonProgressCountsTable;
  tutoring_sessions: TutoringSessionsTable;
  tutoring_attendance: TutoringAttendanceTable;
  activity_intervals: ActivityIntervalsTable;
  logins: LoginsTable;
  quiz_attempts: QuizAttemptsTable;
  quiz_answers: QuizAnswersTable;
  documents: DocumentsTable;
  satisfaction_surveys: SatisfactionSurveysTable;
  tutoring_ratings: TutoringRatingsTable;
  lesson_ratings: LessonRatingsTable;
}
