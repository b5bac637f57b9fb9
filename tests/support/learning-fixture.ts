import type { DB } from '../../db/connection';
import { addLearner } from './factories';

export interface FixtureLesson {
  id: string;
  key: string;
  courseId: string;
  questions: { id: string; options: string[]; correct: string }[];
}

/**
 * A small programme: two courses, one module each; the first module has a plain lesson and a quiz
 * lesson (two questions), the second a single lesson.
 */
export async function createProgramme(db: DB, orgId: string, slug = 'excel-intermediaire', title = 'Excel — niveau intermédiaire') {
  const programme = await db.insertInto('programmes').values({ org_id: orgId, slug, title }).returning('id').executeTakeFirstOrThrow();
  const lessons: FixtureLesson[] = [];
  const layout = [
    {
      course: 'Calculer',
      module: 'Module 1 — Formules',
      lessons: [
        { title: 'Les références', quiz: false },
        { title: 'Quiz — formules', quiz: true },
      ],
    },
    { course: 'Analyser', module: 'Module 2 — Tableaux croisés', lessons: [{ title: 'Créer un TCD', quiz: false }] },
  ];
  for (const [courseIndex, part] of layout.entries()) {
    const course = await db
      .insertInto('courses')
      .values({ org_id: orgId, programme_id: programme.id, position: courseIndex + 1, title: part.course })
      .returning('id')
      .executeTakeFirstOrThrow();
    const module = await db
      .insertInto('modules')
      .values({ org_id: orgId, programme_id: programme.id, course_id: course.id, position: courseIndex + 1, title: part.module })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const [lessonIndex, spec] of part.lessons.entries()) {
      const key = `${slug}-m${courseIndex + 1}-l${lessonIndex + 1}`;
      const lesson = await db
        .insertInto('lessons')
        .values({
          org_id: orgId,
          programme_id: programme.id,
          module_id: module.id,
          position: lessonIndex + 1,
          key,
          title: spec.title,
          has_quiz: spec.quiz,
          pass_score: 50,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const questions = [];
      if (spec.quiz) {
        for (const [position, [wording, correct, ...others]] of [
          ['Quelle fonction renvoie la position d’une valeur ?', 'EQUIV', 'INDEX', 'RECHERCHEV'],
          ['Quel symbole fige une référence ?', '$', '#', '&'],
        ].entries()) {
          const options = [correct!, ...others];
          const question = await db
            .insertInto('quiz_questions')
            .values({
              org_id: orgId,
              lesson_id: lesson.id,
              position: position + 1,
              wording: wording!,
              options,
              correct_option: correct!,
            })
            .returning('id')
            .executeTakeFirstOrThrow();
          questions.push({ id: question.id, options, correct: correct! });
        }
      }
      lessons.push({ id: lesson.id, key, courseId: course.id, questions });
    }
  }
  return { programmeId: programme.id, slug, title, lessons };
}

/** An invited learner with an assigned licence, enrolled in these programmes. */
export async function enrolLearner(db: DB, orgId: string, email: string, programmeIds: string[], name: string | null = 'Claire Martin') {
  const learner = await addLearner(db, orgId, { email, name, status: 'invité', licence: { type: 'standard', status: 'attribuée' } });
  for (const programmeId of programmeIds) {
    await db
      .insertInto('programme_enrolments')
      .values({ org_id: orgId, membership_id: learner.membershipId, programme_id: programmeId })
      .execute();
  }
  return learner;
}
