import { afterAll, describe, expect, it } from 'vitest';
import { frenchDateTime } from '../src/pdf/french-format';
import { createRenderPool } from '../src/pdf/render-pool';
import { describeUserAgent } from '../src/pdf/user-agent';
import { extractPdfText } from './activity-report.pdf-text';
import { sampleReportData } from './activity-report.sample';
import { niceOf, renderThreadsOf } from './support/server-process';

// Rendering, through the worker pool the server uses, read back with pdf.js.

const pool = createRenderPool(2);
afterAll(() => pool.close());

describe('activity report rendering', () => {
  // A cold worker (loading pdfmake and its fonts) on a busy two-core machine: seconds, not minutes.
  it('renders a heavy report whose text reads back intact, page by page', { timeout: 120_000 }, async () => {
    const data = sampleReportData('heavy');
    const pdf = await pool.renderActivityReport(data);
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const read = await extractPdfText(pdf);
    expect(read.pageCount).toBeGreaterThan(10);
    expect(read.info).toMatchObject({
      Title: 'Rapport d’activité 2026 · Hélène Lefèvre-Ørsted',
      Author: 'Formations Côte d’Émeraude',
      Language: 'fr-FR',
    });

    // Accents, typographic apostrophes and non-Latin-1 letters survive embedding and extraction.
    const text = read.lines.join('\n');
    for (const expected of [
      'Hélène Lefèvre-Ørsted',
      'Formations Côte d’Émeraude',
      '6. Émargement des séances de tutorat',
      'Écrits professionnels et orthographe',
      '« logins »',
    ]) {
      expect(text).toContain(expected);
    }
    read.pages.forEach((lines, index) => {
      // Numbered pages, and the running header from the second page on.
      expect(lines.at(-1)).toMatch(new RegExp(`Page ${index + 1} / ${read.pageCount}$`));
      const header = lines[0]!.startsWith('Rapport d’activité 2026 · Hélène Lefèvre-Ørsted');
      expect(header).toBe(index > 0);
    });

    // Every login is one line of the table, with its own figures.
    for (const login of data.logins) {
      expect(read.lines).toContain(
        `${frenchDateTime(login.debut)} ${frenchDateTime(login.fin)} ${login.duree_min} min ${login.ip} ${describeUserAgent(login.navigateur)}`,
      );
    }
  });

  it('renders an empty learner as a short, valid report', async () => {
    const read = await extractPdfText(await pool.renderActivityReport(sampleReportData('empty')));
    expect(read.pageCount).toBeLessThanOrEqual(2);
    expect(read.lines.filter((line) => line.startsWith('Aucune donnée'))).toHaveLength(7);
  });

  it('renders reports in parallel, each with its own content', async () => {
    const variants = Array.from({ length: 6 }, (_, index) => ({ ...sampleReportData('small'), year: 2020 + index }));
    const rendered = await Promise.all(variants.map((data) => pool.renderActivityReport(data)));
    const years = await Promise.all(rendered.map(async (pdf) => (await extractPdfText(pdf)).info.Title));
    expect(years).toEqual(variants.map((data) => `Rapport d’activité ${data.year} · Hélène Lefèvre-Ørsted`));
    expect(pool.workerCount).toBe(2);
  });

  it('reports a failed render as an error and keeps rendering', async () => {
    const broken = { ...sampleReportData('small'), logins: null } as never;
    await expect(pool.renderActivityReport(broken)).rejects.toThrow(/PDF report render failed/);
    const pdf = await pool.renderActivityReport(sampleReportData('small'));
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
  });

  it.runIf(process.platform === 'linux')('renders at a lower priority than the event loop (a nice value per thread)', async () => {
    await pool.renderActivityReport(sampleReportData('small'));
    expect(niceOf(process.pid, String(process.pid))).toBe(0);
    expect(renderThreadsOf(process.pid)).toHaveLength(pool.workerCount);
  });

  it.runIf(process.platform === 'linux')(
    'warms up before serving: every worker starts ahead of the jobs, renders the warm-up report, then lowers its priority',
    { timeout: 120_000 },
    async () => {
      const warming = createRenderPool(2);
      const lowered = renderThreadsOf(process.pid).length; // the other pool's workers
      try {
        const warmUp = warming.warmUp();
        expect(warming.workerCount).toBe(2);

        const { ms, workers } = await warmUp;
        expect(workers).toHaveLength(2);
        for (const worker of workers) {
          expect(worker.pdfBytes).toBeGreaterThan(20_000);
          expect(worker.ms).toBeGreaterThan(0);
          expect(worker.ms).toBeLessThanOrEqual(ms);
        }
        expect(renderThreadsOf(process.pid)).toHaveLength(lowered + 2);

        // The jobs go to the warm workers: none starts.
        const pdfs = await Promise.all([1, 2, 3].map(() => warming.renderActivityReport(sampleReportData('small'))));
        for (const pdf of pdfs) expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
        expect(warming.workerCount).toBe(2);
      } finally {
        await warming.close();
      }
    },
  );

  it('fails a warm-up that the pool stops before it ends, and a warm-up asked of a closed pool', async () => {
    const stopped = createRenderPool(1);
    const warmUp = expect(stopped.warmUp()).rejects.toThrow(/closed/);
    await stopped.close();
    await warmUp;
    await expect(stopped.warmUp()).rejects.toThrow(/closed/);
  });

  it('refuses work once closed', async () => {
    const closing = createRenderPool(1);
    const pending = expect(closing.renderActivityReport(sampleReportData('heavy'))).rejects.toThrow(/closed/);
    await closing.close();
    await pending;
    await expect(closing.renderActivityReport(sampleReportData('small'))).rejects.toThrow(/closed/);
  });
});
