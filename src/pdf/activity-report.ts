import type { components } from '../../codegen/openapi';
import type { ActivityReportData } from '../../db/activity-report';

export type { ActivityReportData } from '../../db/activity-report';

import type { CanvasNode, Content, DocumentDefinition, TableCell } from './document-definition';
import {
  deName,
  frenchDate,
  frenchDateTime,
  frenchDecimal,
  frenchInteger,
  minutesWithHours,
  missing,
  noBreakSpace,
  orMissing,
  outOf,
} from './french-format';
import {
  type Cell,
  type Column,
  colours,
  contentWidth,
  dataTable,
  emptyBlock,
  type Heading,
  headingStack,
  keyValueGrid,
  lessonCell,
  pageMargins,
  small,
  spanning,
  text,
  totalsRow,
} from './report-layout';
import { describeUserAgent } from './user-agent';

type Schemas = components['schemas'];

/** The French name of the learner as the report shows it, and a fallback when none was given. */
export function learnerDisplayName(learner: ActivityReportData['learner']): string {
  return learner.name?.trim() || learner.email;
}

export interface ModuleTime {
  programmeSlug: string;
  programme: string;
  module: string;
  minutes: number;
}

/** Minutes per module, summed from the `progress` rows, in the rows' order (programme, module). */
export function timePerModule(progress: readonly Schemas['ProgressRow'][]): ModuleTime[] {
  const byKey = new Map<string, ModuleTime>();
  for (const row of progress) {
    const key = moduleKey(row.programme_slug, row.module);
    const entry = byKey.get(key) ?? { programmeSlug: row.programme_slug, programme: row.programme, module: row.module, minutes: 0 };
    entry.minutes += row.temps_min;
    byKey.set(key, entry);
  }
  return [...byKey.values()];
}

function moduleKey(programmeSlug: string, module: string): string {
  return `${programmeSlug}\u0000${module}`;
}

/** Correct answers per quiz attempt, from the `quiz-answers` rows, keyed like `attemptKey`. */
export function correctAnswersByAttempt(answers: readonly Schemas['QuizAnswerRow'][]): Map<string, { correct: number; questions: number }> {
  const byAttempt = new Map<string, { correct: number; questions: number }>();
  for (const answer of answers) {
    const key = attemptKey(answer);
    const entry = byAttempt.get(key) ?? { correct: 0, questions: 0 };
    entry.questions += 1;
    if (answer.correct === 'Oui') entry.correct += 1;
    byAttempt.set(key, entry);
  }
  return byAttempt;
}

/** One quiz attempt of one learner: its lesson and attempt number. */
function attemptKey(row: { programme_slug: string; module: string; lecon: string; tentative: number }): string {
  return [row.programme_slug, row.module, row.lecon, row.tentative].join('\u0000');
}

// ---------------------------------------------------------------------------------------------
// Building blocks

function periodLabel(data: ActivityReportData): string {
  return `du 01/01/${data.year} au 31/12/${data.year}`;
}

function scopeSentence(data: ActivityReportData): string {
  return data.programme ? `l’année ${data.year} et le programme « ${data.programme.title} »` : `l’année ${data.year}`;
}

function identityBlock(data: ActivityReportData): Content {
  const name = data.learner.name?.trim() || 'Nom non renseigné';
  const rows: [string, string][] = [
    ['Organisme de formation', data.organisationName],
    ['Apprenant', name],
    ['Adresse électronique', data.learner.email],
    ['Identifiant (user_id)', data.learner.userId],
    ['Invité le', frenchDate(data.summary?.invite_le ?? null)],
    ['Inscrit le', frenchDate(data.summary?.inscrit_le ?? null)],
    ['Période', periodLabel(data)],
    ['Programme', data.programme ? `${data.programme.title} (${data.programme.slug})` : 'Tous les programmes'],
    ['Généré le', `${frenchDateTime(data.generatedAt)} (heure de Paris)`],
  ];
  return {
    stack: [
      { text: 'Rapport d’activité', ...text.title },
      { text: `Année ${data.year} · dossier de suivi individuel de l’apprenant`, ...text.subtitle },
      {
        table: {
          widths: [130, '*'],
          body: rows.map(([label, value]) => [
            { text: label, ...text.label },
            { text: value, bold: true },
          ]),
        },
        layout: {
          hLineWidth: (line, node) => (line === 0 || line === node.table.body.length ? 0.8 : 0.3),
          hLineColor: (line, node) => (line === 0 || line === node.table.body.length ? colours.brand : colours.rule),
          vLineWidth: () => 0,
          paddingTop: () => 3,
          paddingBottom: () => 3,
        },
      },
    ],
    unbreakable: true,
    margin: [0, 0, 0, 16],
  };
}

function summarySection(data: ActivityReportData, number: number): Content {
  const heading: Heading = {
    title: `${number}. Synthèse de l’année`,
    note: data.programme
      ? `Chiffres de l’année ${data.year} tous programmes confondus (ligne de l’apprenant dans la ressource « learners », qui ne se filtre pas par programme).`
      : `Chiffres de l’année ${data.year} (ligne de l’apprenant dans la ressource « learners »).`,
  };
  const summary = data.summary;
  if (!summary) return emptyBlock(heading, `Aucune donnée pour ${scopeSentence(data)}.`);
  const pairs: [string, string][] = [
    ['Connexions', frenchInteger(summary.connexions)],
    ['Temps actif total (dédoublonné)', minutesWithHours(summary.temps_actif_min)],
    ['Temps sur les cours', minutesWithHours(summary.temps_cours_min)],
    ['Temps au lab IA', minutesWithHours(summary.temps_labia_min)],
    ['Temps en tutorat', minutesWithHours(summary.temps_tutorat_min)],
    ['Programmes suivis', frenchInteger(summary.programmes_suivis)],
    ['Programmes complétés', frenchInteger(summary.programmes_completes)],
    ['Évaluations tentées', frenchInteger(summary.evaluations_total)],
    ['Évaluations réussies', frenchInteger(summary.evaluations_reussies)],
    ['Score moyen (réussies)', outOf(summary.score_moyen, 100)],
    ['Séances de tutorat', frenchInteger(summary.seances_tutorat)],
    ['Séances avec présence validée', frenchInteger(summary.seances_present)],
    ['PIF émis', frenchInteger(summary.pif_emis)],
    ['Attestations émises', frenchInteger(summary.attestations_emises)],
    ['Satisfaction (dernière enquête)', outOf(summary.satisfaction_note, 5)],
    ['NPS (dernière enquête)', outOf(summary.nps, 10)],
  ];
  return { stack: [...headingStack(heading), keyValueGrid(pairs, 132)], unbreakable: true, margin: [0, 0, 0, 14] };
}

function enrollmentsSection(data: ActivityReportData, number: number): Content {
  return dataTable(
    { title: `${number}. Programmes suivis` },
    [
      { header: 'Programme', width: '*' },
      { header: 'Progression', width: 52, alignment: 'right' },
      { header: 'Leçons vues', width: 48, alignment: 'right' },
      { header: 'Complété', width: 42, alignment: 'center' },
      { header: 'Complété le', width: 50 },
      { header: 'Première connexion', width: 66 },
      { header: 'Dernière connexion', width: 66 },
    ],
    data.enrollments.map((row) => [
      { stack: [{ text: row.programme }, small(row.programme_slug)] },
      `${frenchInteger(row.pourcentage)}${noBreakSpace}%`,
      `${frenchInteger(row.lecons_vues)}/${frenchInteger(row.lecons_total)}`,
      row.complete,
      frenchDate(row.complete_le),
      frenchDateTime(row.premiere_connexion_le),
      frenchDateTime(row.derniere_connexion_le),
    ]),
    `Aucune donnée pour ${scopeSentence(data)}.`,
  );
}

function loginsSection(data: ActivityReportData, number: number): Content {
  const totalMinutes = data.logins.reduce((sum, row) => sum + (row.duree_min ?? 0), 0);
  const notes = ['Appareil déduit de la chaîne user-agent, donnée en entier par la ressource « logins ».'];
  if (data.programme) notes.unshift('Une connexion n’est rattachée à aucun programme : toutes les connexions de l’année sont listées.');
  return dataTable(
    { title: `${number}. Connexions`, note: notes.join(' ') },
    [
      { header: 'Début', width: 66 },
      { header: 'Fin', width: 66 },
      { header: 'Durée', width: 44, alignment: 'right' },
      { header: 'Adresse IP', width: 130 },
      { header: 'Appareil', width: '*' },
    ],
    data.logins.map((row) => [
      frenchDateTime(row.debut),
      row.fin === null ? 'en cours' : frenchDateTime(row.fin),
      row.duree_min === null ? missing : `${frenchInteger(row.duree_min)}${noBreakSpace}min`,
      row.ip,
      orMissing(describeUserAgent(row.navigateur)),
    ]),
    `Aucune donnée pour l’année ${data.year}.`,
    totalsRow(`Total : ${frenchInteger(data.logins.length)} connexions, durée cumulée ${minutesWithHours(totalMinutes)}`, 5),
  );
}

/** Horizontal bars of minutes per module, as a table so that a long list splits across pages. */
function timePerModuleChart(data: ActivityReportData, number: number): Content {
  const modules = timePerModule(data.progress);
  const labelWidth = 190;
  const valueWidth = 70;
  // The bar column's width: the rest of the line, less the cells' paddings.
  const barWidth = contentWidth - labelWidth - valueWidth - 3 * 8;
  const longest = Math.max(1, ...modules.map((module) => module.minutes));
  const severalProgrammes = new Set(modules.map((module) => module.programmeSlug)).size > 1;
  const bar = (minutes: number): TableCell => {
    const width = (minutes / longest) * barWidth;
    if (width <= 0) return { text: '' };
    const canvas: CanvasNode = { canvas: [{ type: 'rect', x: 0, y: 1.5, w: Math.max(width, 1), h: 8, color: colours.bar }] };
    return canvas;
  };
  return dataTable(
    {
      title: `${number}. Temps passé par leçon`,
      subtitle: 'Temps actif par module',
      note: 'Somme des temps actifs des leçons de chaque module (ressource « progress »).',
    },
    [
      { header: 'Module', width: labelWidth },
      { header: '', width: barWidth },
      { header: 'Temps actif', width: valueWidth, alignment: 'right' },
    ],
    modules.map((module) => [
      severalProgrammes ? { stack: [{ text: module.module }, small(module.programme)] } : module.module,
      bar(module.minutes),
      `${frenchInteger(module.minutes)}${noBreakSpace}min`,
    ]),
    `Aucune donnée pour ${scopeSentence(data)}.`,
  );
}

/** A row across the table naming a group (a programme, a module), with its figure muted after it. */
function headingRow(name: string, figure: string, fillColor: string, columns: number): Cell[] {
  return spanning(
    {
      text: [
        { text: name, bold: true },
        { text: ` · ${figure}`, color: colours.muted },
      ],
      fillColor,
    },
    columns,
  );
}

function lessonsTable(data: ActivityReportData): Content {
  const columns: Column[] = [
    { header: 'Leçon', width: '*' },
    { header: 'Vue', width: 30, alignment: 'center' },
    { header: 'Visites', width: 40, alignment: 'right' },
    { header: 'Temps actif', width: 56, alignment: 'right' },
    { header: 'Dernière visite', width: 62 },
  ];
  const moduleMinutes = new Map(timePerModule(data.progress).map((entry) => [moduleKey(entry.programmeSlug, entry.module), entry.minutes]));
  const rows: Cell[][] = [];
  let programme: string | null = null;
  let module: string | null = null;
  for (const row of data.progress) {
    if (row.programme_slug !== programme) {
      programme = row.programme_slug;
      module = null;
      // A programme's lessons open with its title and overall progress, then each module's title.
      rows.push(
        headingRow(
          row.programme,
          `progression ${frenchInteger(row.pourcentage_programme)}${noBreakSpace}%`,
          colours.headerFill,
          columns.length,
        ),
      );
    }
    if (row.module !== module) {
      module = row.module;
      const minutes = moduleMinutes.get(moduleKey(row.programme_slug, row.module)) ?? 0;
      rows.push(headingRow(row.module, `${frenchInteger(minutes)}${noBreakSpace}min`, colours.totalFill, columns.length));
    }
    rows.push([
      { text: row.lecon, margin: [8, 0, 0, 0] },
      row.vue,
      frenchInteger(row.visites),
      `${frenchInteger(row.temps_min)}${noBreakSpace}min`,
      frenchDate(row.derniere_visite_le),
    ]);
  }
  const visits = data.progress.reduce((sum, row) => sum + row.visites, 0);
  const minutes = data.progress.reduce((sum, row) => sum + row.temps_min, 0);
  return dataTable(
    { subtitle: 'Détail par leçon' },
    columns,
    rows,
    `Aucune donnée pour ${scopeSentence(data)}.`,
    totalsRow(
      `Total : ${frenchInteger(data.progress.length)} leçons, ${frenchInteger(visits)} visites, temps actif ${minutesWithHours(minutes)}`,
      columns.length,
    ),
  );
}

function timeSection(data: ActivityReportData, number: number): Content[] {
  if (data.progress.length === 0)
    return [emptyBlock({ title: `${number}. Temps passé par leçon` }, `Aucune donnée pour ${scopeSentence(data)}.`)];
  return [timePerModuleChart(data, number), lessonsTable(data)];
}

function evaluationsSection(data: ActivityReportData, number: number): Content {
  const answers = correctAnswersByAttempt(data.quizAnswers);
  const passed = data.evaluations.filter((row) => row.reussi === 'Oui').length;
  return dataTable(
    { title: `${number}. Évaluations et tentatives de quiz` },
    [
      { header: 'Date', width: 50 },
      { header: 'Leçon évaluée', width: '*' },
      { header: 'Tentative', width: 40, alignment: 'right' },
      { header: 'Score', width: 42, alignment: 'right' },
      { header: 'Bonnes réponses', width: 50, alignment: 'right' },
      { header: 'Réussi', width: 34, alignment: 'center' },
    ],
    data.evaluations.map((row) => {
      const attempt = answers.get(attemptKey(row));
      return [
        frenchDate(row.date),
        lessonCell(row.lecon, row.module, row.programme),
        frenchInteger(row.tentative),
        outOf(row.score, 100),
        attempt ? `${frenchInteger(attempt.correct)}/${frenchInteger(attempt.questions)}` : missing,
        row.reussi,
      ];
    }),
    `Aucune donnée pour ${scopeSentence(data)}.`,
    totalsRow(`Total : ${frenchInteger(data.evaluations.length)} tentatives, ${frenchInteger(passed)} réussies`, 6),
  );
}

/** Each session with its validated presence and both signatures on its line (docs/decisions.md#activity-report). */
function attendanceSection(data: ActivityReportData, number: number): Content {
  const present = data.attendance.filter((row) => row.present === 'Oui').length;
  const planned = data.attendance.reduce((sum, row) => sum + row.duree_prevue_min, 0);
  const connected = data.attendance.reduce((sum, row) => sum + row.temps_connecte_min, 0);
  return dataTable(
    { title: `${number}. Émargement des séances de tutorat` },
    [
      { header: 'Date', width: 62 },
      { header: 'Séance', width: '*' },
      { header: 'Durée prévue', width: 44, alignment: 'right' },
      { header: 'Présent', width: 36, alignment: 'center' },
      { header: 'Temps connecté', width: 50, alignment: 'right' },
      { header: 'Signature apprenant', width: 50, alignment: 'center' },
      { header: 'Signature formateur', width: 50, alignment: 'center' },
    ],
    data.attendance.map((row) => [
      frenchDateTime(row.date),
      { stack: [{ text: row.seance }, small(row.programme ?? 'Séance sans programme')] },
      `${frenchInteger(row.duree_prevue_min)}${noBreakSpace}min`,
      row.present,
      `${frenchInteger(row.temps_connecte_min)}${noBreakSpace}min`,
      row.signe_apprenant,
      row.signe_formateur,
    ]),
    `Aucune donnée pour ${scopeSentence(data)}.`,
    totalsRow(
      `Total : ${frenchInteger(data.attendance.length)} séances, ${frenchInteger(present)} présences validées, ` +
        `durée prévue ${minutesWithHours(planned)}, temps connecté ${minutesWithHours(connected)}`,
      7,
    ),
  );
}

function documentsSection(data: ActivityReportData, number: number): Content {
  return dataTable(
    { title: `${number}. Documents émis` },
    [
      { header: 'Type', width: 62 },
      { header: 'Programme', width: '*' },
      { header: 'Émis le', width: 56 },
      { header: 'Heures', width: 50, alignment: 'right' },
      { header: 'Score de complétion', width: 60, alignment: 'right' },
    ],
    data.documents.map((row) => [
      row.type === 'PIF' ? 'PIF' : 'Attestation',
      { stack: [{ text: row.programme }, small(row.type === 'PIF' ? 'heures estimées' : 'heures mesurées')] },
      frenchDate(row.emis_le),
      `${frenchDecimal(row.heures)}${noBreakSpace}h`,
      outOf(row.score_completion, 100),
    ]),
    `Aucune donnée pour ${scopeSentence(data)}.`,
  );
}

function satisfactionSection(data: ActivityReportData, number: number): Content[] {
  const title = `${number}. Satisfaction et avis`;
  const empty = `Aucune donnée pour ${scopeSentence(data)}.`;
  if (data.satisfaction.length + data.tutoringRatings.length + data.lessonRatings.length === 0) {
    return [emptyBlock({ title }, empty)];
  }
  return [surveysTable(data, title, empty), tutoringRatingsTable(data, empty), lessonRatingsTable(data, empty)];
}

function surveysTable(data: ActivityReportData, sectionTitle: string, empty: string): Content {
  return dataTable(
    { title: sectionTitle, subtitle: 'Enquêtes de satisfaction' },
    [
      { header: 'Répondu le', width: 52 },
      { header: 'Programme', width: 120 },
      { header: 'Note', width: 30, alignment: 'right' },
      { header: 'NPS', width: 32, alignment: 'right' },
      { header: 'Commentaire', width: '*' },
    ],
    data.satisfaction.map((row) => [
      frenchDate(row.repondu_le),
      row.programme,
      outOf(row.note, 5),
      outOf(row.nps, 10),
      orMissing(row.verbatim),
    ]),
    empty,
  );
}

function tutoringRatingsTable(data: ActivityReportData, empty: string): Content {
  return dataTable(
    { subtitle: 'Avis sur les séances de tutorat' },
    [
      { header: 'Soumis le', width: 52 },
      { header: 'Séance', width: 130 },
      { header: 'Formateur', width: 70 },
      { header: 'Séance', width: 30, alignment: 'right' },
      { header: 'Formateur', width: 38, alignment: 'right' },
      { header: 'Commentaire', width: '*' },
    ],
    data.tutoringRatings.map((row) => [
      frenchDate(row.soumis_le),
      { stack: [{ text: row.seance }, small(row.programme ?? 'Séance sans programme')] },
      row.formateur,
      outOf(row.note_seance, 5),
      outOf(row.note_formateur, 5),
      orMissing(row.commentaire),
    ]),
    empty,
  );
}

function lessonRatingsTable(data: ActivityReportData, empty: string): Content {
  return dataTable(
    { subtitle: 'Avis sur les leçons' },
    [
      { header: 'Soumis le', width: 52 },
      { header: 'Leçon', width: 190 },
      { header: 'Note', width: 30, alignment: 'right' },
      { header: 'Commentaire', width: '*' },
    ],
    data.lessonRatings.map((row) => [
      frenchDate(row.soumis_le),
      lessonCell(row.lecon, row.module, row.programme),
      outOf(row.note, 5),
      orMissing(row.commentaire),
    ]),
    empty,
  );
}

// ---------------------------------------------------------------------------------------------

/**
 * The pdfmake definition of a learner's activity report: identity, summary, then one section per
 * kind of activity, each a table that repeats its title and headers on every page it runs onto, or
 * "Aucune donnée". Pure: same data, same definition; rendering is `src/pdf/render.ts`.
 */
export function buildActivityReport(data: ActivityReportData): DocumentDefinition {
  const name = learnerDisplayName(data.learner);
  const runningTitle = `Rapport d’activité ${data.year} · ${name}`;
  const sections = [
    summarySection,
    enrollmentsSection,
    loginsSection,
    timeSection,
    evaluationsSection,
    attendanceSection,
    documentsSection,
    satisfactionSection,
  ];
  return {
    pageSize: 'A4',
    pageOrientation: 'portrait',
    pageMargins,
    language: 'fr-FR',
    info: {
      title: runningTitle,
      author: data.organisationName,
      subject: `Rapport d’activité ${deName(name)} pour l’année ${data.year}`,
      keywords: 'rapport d’activité, audit, émargement, formation',
      creator: 'API partenaires',
      producer: 'API partenaires',
    },
    header: (currentPage) =>
      currentPage === 1
        ? null
        : {
            columns: [
              { text: runningTitle, bold: true, color: colours.brand },
              { text: data.organisationName, alignment: 'right', color: colours.muted },
            ],
            fontSize: 7.5,
            margin: [pageMargins[0], 24, pageMargins[2], 0],
          },
    footer: (currentPage, pageCount) => ({
      columns: [
        { text: `Généré le ${frenchDateTime(data.generatedAt)} (heure de Paris) · ${data.organisationName}`, color: colours.muted },
        { text: `Page ${currentPage} / ${pageCount}`, alignment: 'right', bold: true, color: colours.brand },
      ],
      fontSize: 7.5,
      margin: [pageMargins[0], 16, pageMargins[2], 0],
    }),
    content: [identityBlock(data), ...sections.flatMap((section, index) => section(data, index + 1))],
    defaultStyle: { font: 'Roboto', fontSize: 8.5, lineHeight: 1.15, color: colours.ink },
  };
}
