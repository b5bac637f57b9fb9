import { describe, expect, it } from 'vitest';
import { type ActivityReportData, buildActivityReport, correctAnswersByAttempt, timePerModule } from '../src/pdf/activity-report';
import type { Content, DocumentDefinition, TableNode } from '../src/pdf/document-definition';
import { deName, frenchDate, frenchDateTime, frenchDecimal, frenchInteger, minutesWithHours, outOf } from '../src/pdf/french-format';
import { activityReportFileName, pdfAttachmentHeaders } from '../src/pdf/report-file-name';
import { describeUserAgent } from '../src/pdf/user-agent';
import { warmUpReportData } from '../src/pdf/warm-up-report';
import { sampleReportData } from './activity-report.sample';

// The pure document builder, without rendering: what the definition says, and how.

/** Every text of a definition's content, in document order. */
function texts(content: Content | undefined | null): string[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return [content];
  if (Array.isArray(content)) return content.flatMap(texts);
  const node = content as unknown as Record<string, unknown>;
  const out: string[] = [];
  if ('text' in node) out.push(...texts(node.text as Content));
  if ('stack' in node) out.push(...texts(node.stack as Content));
  if ('columns' in node) out.push(...texts(node.columns as Content));
  if ('table' in node) out.push(...(node as unknown as TableNode).table.body.flat().flatMap((cell) => texts(cell as Content)));
  return out;
}

function tables(content: Content): TableNode[] {
  if (typeof content === 'string') return [];
  if (Array.isArray(content)) return content.flatMap(tables);
  const found: TableNode[] = [];
  if ('table' in content) found.push(content);
  if ('stack' in content) found.push(...tables(content.stack));
  return found;
}

/** The data tables: those whose first row is a title spanning the whole table. */
function dataTables(definition: DocumentDefinition) {
  return tables(definition.content).filter((table) => table.table.headerRows === 2);
}

function joined(definition: DocumentDefinition): string {
  return texts(definition.content).join('\n');
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

const sectionTitles = [
  '1. Synthèse de l’année',
  '2. Programmes suivis',
  '3. Connexions',
  '4. Temps passé par leçon',
  '5. Évaluations et tentatives de quiz',
  '6. Émargement des séances de tutorat',
  '7. Documents émis',
  '8. Satisfaction et avis',
];

describe('buildActivityReport', () => {
  it('is pure: it neither changes its data nor depends on anything else', () => {
    const data = deepFreeze(sampleReportData('heavy'));
    const first = buildActivityReport(data);
    const second = buildActivityReport(data);
    expect(JSON.stringify(first)).toBe(JSON.stringify(second));
  });

  it('opens with the identity block: organisation, learner, period, programme filter, generation time', () => {
    const data = sampleReportData('small');
    const text = joined(buildActivityReport(data));
    for (const expected of [
      'Rapport d’activité',
      'Formations Côte d’Émeraude',
      'Hélène Lefèvre-Ørsted',
      'helene.lefevre@exemple.fr',
      '0b5c2a7e-3f64-4b1e-9d62-1c4f5e7a9b10',
      'du 01/01/2026 au 31/12/2026',
      'Tous les programmes',
      '22/11/2026 09:30 (heure de Paris)',
      '01/12/2025',
      '03/12/2025',
    ])
      expect(text).toContain(expected);
    const filtered = joined(
      buildActivityReport({ ...data, programme: { slug: 'excel-intermediaire', title: 'Excel — niveau intermédiaire' } }),
    );
    expect(filtered).toContain('Excel — niveau intermédiaire (excel-intermediaire)');
    expect(filtered).not.toContain('Tous les programmes');
    // Logins and the learners row know no programme: the report says so rather than mislead.
    expect(filtered).toContain('toutes les connexions de l’année sont listées');
    expect(filtered).toContain('tous programmes confondus');
  });

  it('has every section, in order, whatever the data', () => {
    for (const size of ['heavy', 'empty'] as const) {
      const text = joined(buildActivityReport(sampleReportData(size)));
      const positions = sectionTitles.map((title) => text.indexOf(title));
      expect(positions.every((position) => position >= 0)).toBe(true);
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    }
  });

  it('says "Aucune donnée" instead of an empty section, and has no empty table', () => {
    const definition = buildActivityReport(sampleReportData('empty'));
    const text = texts(definition.content);
    // Every section but the summary (always a row of figures) is empty.
    expect(text.filter((line) => line.startsWith('Aucune donnée'))).toHaveLength(sectionTitles.length - 1);
    expect(dataTables(definition)).toHaveLength(0);
    // The summary still gives its figures: zeros, and dashes for what does not exist.
    expect(text).toContain('Score moyen (réussies)');
    expect(texts(definition.content).join('|')).toContain('Score moyen (réussies)|—');
  });

  it('gives the render workers a warm-up report with rows in every section and sub-section', () => {
    const definition = buildActivityReport(warmUpReportData());
    const text = texts(definition.content);
    expect(text.filter((line) => line.startsWith('Aucune donnée'))).toEqual([]);
    expect(dataTables(definition).length).toBe(dataTables(buildActivityReport(sampleReportData('heavy'))).length);
  });

  it('splits tables cleanly: title and headers repeat, rows never break, the first row stays with its header', () => {
    const definition = buildActivityReport(sampleReportData('heavy'));
    const found = dataTables(definition);
    expect(found.length).toBeGreaterThanOrEqual(9);
    for (const table of found) {
      expect(table.table.dontBreakRows).toBe(true);
      expect(table.table.keepWithHeaderRows).toBe(1);
      const columns = table.table.widths!.length;
      expect(table.table.body.every((row) => row.length === columns)).toBe(true);
      expect(table.table.body[0]![0]).toMatchObject({ colSpan: columns });
    }
  });

  it('has a running header from page 2 and numbered pages', () => {
    const definition = buildActivityReport(sampleReportData('small'));
    const pageSize = { width: 595.28, height: 841.89 };
    expect(definition.header!(1, 3, pageSize)).toBeNull();
    expect(texts(definition.header!(2, 3, pageSize))).toEqual([
      'Rapport d’activité 2026 · Hélène Lefèvre-Ørsted',
      'Formations Côte d’Émeraude',
    ]);
    expect(texts(definition.footer!(2, 3, pageSize))).toContain('Page 2 / 3');
    expect(definition.language).toBe('fr-FR');
    expect(definition.info?.title).toBe('Rapport d’activité 2026 · Hélène Lefèvre-Ørsted');
    expect(definition.info?.subject).toBe('Rapport d’activité d’Hélène Lefèvre-Ørsted pour l’année 2026');
  });

  it('elides « de » before a name as French writes it', () => {
    expect(['Camille', 'Adrien', 'Élodie', 'Hugo', 'Yves', 'Yannick', 'Œdipe', 'Zoé'].map(deName)).toEqual([
      'de Camille',
      'd’Adrien',
      'd’Élodie',
      'd’Hugo',
      'd’Yves',
      'de Yannick',
      'd’Œdipe',
      'de Zoé',
    ]);
  });

  it('shows each resource row with its own figures', () => {
    const data = sampleReportData('heavy');
    const text = joined(buildActivityReport(data));
    const login = data.logins[17]!;
    expect(text).toContain(frenchDateTime(login.debut));
    expect(text).toContain(`${login.duree_min}\u00a0min`);
    const attendance = data.attendance[3]!;
    expect(text).toContain(attendance.seance);
    const document = data.documents[0]!;
    expect(text).toContain(`${frenchDecimal(document.heures)}\u00a0h`);
    expect(text).toContain(`${frenchInteger(data.summary!.connexions)}`);
    expect(text).toContain(minutesWithHours(data.summary!.temps_actif_min));
  });

  it('charts the time per module as the sum of its lessons, bars proportional to the minutes', () => {
    const data = sampleReportData('heavy');
    const modules = timePerModule(data.progress);
    expect(modules).toHaveLength(24);
    for (const module of modules) {
      const lessons = data.progress.filter((row) => row.programme_slug === module.programmeSlug && row.module === module.module);
      expect(module.minutes).toBe(lessons.reduce((sum, row) => sum + row.temps_min, 0));
    }
    const chart = dataTables(buildActivityReport(data)).find((table) =>
      texts(table.table.body[0]![0] as Content).includes('Temps actif par module'),
    )!;
    const rows = chart.table.body.slice(2);
    expect(rows).toHaveLength(modules.length);
    const longest = Math.max(...modules.map((module) => module.minutes));
    rows.forEach((row, index) => {
      const bar = row[1] as { canvas?: { w: number }[] };
      const expected = (modules[index]!.minutes / longest) * (chart.table.widths![1] as number);
      if (modules[index]!.minutes === 0) expect(bar.canvas).toBeUndefined();
      else expect(bar.canvas![0]!.w).toBeCloseTo(Math.max(expected, 1), 5);
      expect(texts(row[2] as Content)).toEqual([`${modules[index]!.minutes}\u00a0min`]);
    });
  });

  it('counts the correct answers of each quiz attempt from its answers', () => {
    const data = sampleReportData('heavy');
    const byAttempt = correctAnswersByAttempt(data.quizAnswers);
    expect(byAttempt.size).toBe(data.evaluations.length);
    const attempt = data.evaluations[5]!;
    const answers = data.quizAnswers.filter(
      (row) => row.lecon === attempt.lecon && row.programme_slug === attempt.programme_slug && row.tentative === attempt.tentative,
    );
    expect([...byAttempt.values()].some((entry) => entry.questions === answers.length)).toBe(true);
    const text = joined(buildActivityReport(data));
    expect(text).toContain(`${answers.filter((row) => row.correct === 'Oui').length}/${answers.length}`);
  });

  it('keeps tutoring attendance whole: presence, connected time, both signatures and totals', () => {
    const data: ActivityReportData = sampleReportData('small');
    const text = texts(buildActivityReport(data).content);
    const present = data.attendance.filter((row) => row.present === 'Oui').length;
    const connected = data.attendance.reduce((sum, row) => sum + row.temps_connecte_min, 0);
    expect(text).toContain(
      `Total : ${data.attendance.length} séances, ${present} présences validées, durée prévue 180\u00a0min (3\u00a0h\u00a000), ` +
        `temps connecté ${connected}\u00a0min (${Math.floor(connected / 60)}\u00a0h\u00a0${String(connected % 60).padStart(2, '0')})`,
    );
    expect(text).toContain('Signature apprenant');
    expect(text).toContain('Signature formateur');
  });
});

describe('French spelling of the wire values', () => {
  it('writes dates, numbers and durations the French way without changing them', () => {
    expect(frenchDate('2026-03-12')).toBe('12/03/2026');
    expect(frenchDate(null)).toBe('—');
    expect(frenchDateTime('2026-03-12 16:41')).toBe('12/03/2026 16:41');
    expect(frenchInteger(1234567)).toBe('1\u00a0234\u00a0567');
    expect(frenchInteger(999)).toBe('999');
    expect(frenchDecimal(21.5)).toBe('21,5');
    expect(frenchDecimal(1200)).toBe('1\u00a0200');
    expect(minutesWithHours(45)).toBe('45\u00a0min');
    expect(minutesWithHours(1234)).toBe('1\u00a0234\u00a0min (20\u00a0h\u00a034)');
    expect(outOf(null, 5)).toBe('—');
    expect(outOf(9, 10)).toBe('9/10');
  });

  it('names the device of a user-agent string', () => {
    expect(describeUserAgent('Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:124.0) Gecko/20100101 Firefox/124.0')).toBe(
      'Firefox 124 · Windows',
    );
    expect(
      describeUserAgent(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
      ),
    ).toBe('Safari 17 · iPhone');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Safari/537.36 Edg/123.0.2420.65',
      ),
    ).toBe('Edge 123 · Windows');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.6312.99 Mobile Safari/537.36',
      ),
    ).toBe('Chrome 123 · Android');
    expect(describeUserAgent('curl/8.5.0')).toBe('curl/8.5.0');
    expect(describeUserAgent('x'.repeat(100))).toHaveLength(60);
    expect(describeUserAgent(null)).toBeNull();
  });
});

describe('report file name', () => {
  it('is ASCII in filename and keeps accents in an RFC 6266 filename*', () => {
    const name = activityReportFileName({ name: 'Hélène Lefèvre-Ørsted', email: 'h@exemple.fr' }, 2026);
    expect(name.ascii).toBe('rapport-activite-helene-lefevre-orsted-2026.pdf');
    expect(name.unicode).toBe('rapport-activite-hélène-lefèvre-ørsted-2026.pdf');
    expect(pdfAttachmentHeaders(name)['Content-Disposition']).toBe(
      `attachment; filename="rapport-activite-helene-lefevre-orsted-2026.pdf"; filename*=UTF-8''${encodeURIComponent('rapport-activite-hélène-lefèvre-ørsted-2026.pdf')}`,
    );
  });

  it('falls back on the email, and stays plain when there is nothing to keep', () => {
    const name = activityReportFileName({ name: null, email: 'Claire.Martin@exemple.fr' }, 2025);
    expect(name).toEqual({
      ascii: 'rapport-activite-claire-martin-exemple-fr-2025.pdf',
      unicode: 'rapport-activite-claire-martin-exemple-fr-2025.pdf',
    });
    expect(pdfAttachmentHeaders(name)['Content-Disposition']).toBe(
      'attachment; filename="rapport-activite-claire-martin-exemple-fr-2025.pdf"',
    );
    expect(activityReportFileName({ name: 'Œdipe Æsir Straße', email: 'x@x' }, 2025).ascii).toBe(
      'rapport-activite-oedipe-aesir-strasse-2025.pdf',
    );
    expect(activityReportFileName({ name: '  ', email: '«»@x' }, 2025).ascii).toBe('rapport-activite-x-2025.pdf');
  });
});
