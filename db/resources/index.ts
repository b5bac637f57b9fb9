import { attendanceResource } from './attendance';
import type { ResourceDefinition } from './definition';
import { documentsResource } from './documents';
import { enrollmentsResource } from './enrollments';
import { evaluationsResource } from './evaluations';
import { learnersResource } from './learners';
import { lessonRatingsResource } from './lesson-ratings';
import { loginsResource } from './logins';
import { progressResource } from './progress';
import { quizAnswersResource } from './quiz-answers';
import { satisfactionResource } from './satisfaction';
import { tutoringRatingsResource } from './tutoring-ratings';
import { usersResource } from './users';

export {
  attendanceResource,
  documentsResource,
  enrollmentsResource,
  evaluationsResource,
  learnersResource,
  lessonRatingsResource,
  loginsResource,
  progressResource,
  quizAnswersResource,
  satisfactionResource,
  tutoringRatingsResource,
  usersResource,
};

/** Every list resource, by its wire name (`summary` is not a list and lives in db/summary.ts). */
export const resources = {
  learners: learnersResource,
  users: usersResource,
  attendance: attendanceResource,
  evaluations: evaluationsResource,
  'quiz-answers': quizAnswersResource,
  documents: documentsResource,
  satisfaction: satisfactionResource,
  enrollments: enrollmentsResource,
  progress: progressResource,
  logins: loginsResource,
  'tutoring-ratings': tutoringRatingsResource,
  'lesson-ratings': lessonRatingsResource,
} as const satisfies Record<string, ResourceDefinition<any>>;

export type ResourceName = keyof typeof resources;
