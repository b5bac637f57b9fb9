import type { DB } from '../../../db/connection';
import { type ModuleTemplate, type ProgrammeTemplate, programmeTemplates } from './catalogue';
import { catalogueTables } from './generated-tables';
import type { Random } from './random';

export interface Question {
  id: string;
  position: number;
  correct: string;
}
export interface Lesson {
  id: string;
  index: number;
  estimatedMinutes: number;
  hasQuiz: boolean;
  isMilestone: boolean;
  passScore: number;
  questions: Question[];
  options: string[][];
}
export interface Programme {
  id: string;
  index: number;
  slug: string;
  template: ProgrammeTemplate;
  lessons: Lesson[];
  moduleTopics: string[];
}

/** What writing the catalogue needs at each level: its buffers, the organisation, and the two random streams. */
interface CatalogueWriter {
  tables: ReturnType<typeof catalogueTables>;
  orgId: string;
  ids: Random;
  random: Random;
}

/** Writes the organisation's catalogue: programmes, courses, modules, lessons and quiz questions. */
export async function writeCatalogue(db: DB, orgId: string, ids: Random, random: Random): Promise<Programme[]> {
  const writer: CatalogueWriter = { tables: catalogueTables(), orgId, ids, random };
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
