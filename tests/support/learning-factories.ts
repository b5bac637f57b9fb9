import type { FastifyInstance } from 'fastify';
import Papa from 'papaparse';
import type { DB } from '../../db/connection';
import { seedOrganisation } from '../../src/local/seed/generate';
import { bearer } from './app';
import { createOrgWithKeys } from './factories';
import { listResources } from './list-resources';

/** "Now" of every seeded test organisation: data runs from 1 January 2024 to 21 November 2026. */
export const seededNow = new Date('2026-11-22T09:00:00Z');
export const seededYear = 2026;
/** The calendar years a seeded test organisation has data in. */
export const seededYears = [seededYear - 2, seededYear - 1, seededYear] as const;

/** An organisation with keys, seeded by the generator (deterministic for a seed). */
export async function seededOrganisation(db: DB, options: { name: string; learners: number; seed: number }) {
  const org = await createOrgWithKeys(db, { name: options.name });
  const seeded = await seedOrganisation(db, {
    orgId: org.orgId,
    learners: options.learners,
    seed: options.seed,
    year: seededYear,
    now: seededNow,
  });
  return { ...org, seeded };
}

const ofLearningData = listResources.filter(({ name }) => name !== 'users');
/** The wire names of the resources of the learning data: every list resource but the platform's `users`. */
export const learningResources: readonly string[] = ofLearningData.map(({ name }) => name);
export type LearningResource = string;

/** Resources without a programme: `programme` is ignored. */
export const withoutProgramme: readonly LearningResource[] = ofLearningData
  .filter((resource) => !resource.filtersByProgramme)
  .map(({ name }) => name);

export type Row = Record<string, unknown>;

/** GET through the real server (auth, validation, handlers); the JSON body or the raw response. */
export function client(app: FastifyInstance, key: string) {
  const get = (url: string) => app.inject({ method: 'GET', url, headers: bearer(key) });
  return {
    get,
    async json(url: string) {
      const response = await get(url);
      if (response.statusCode !== 200) throw new Error(`${url} : ${response.statusCode} ${response.body}`);
      return response.json();
    },
    /** Every row of a resource, page after page (limit 1000). */
    async all(resource: string, query = ''): Promise<Row[]> {
      const rows: Row[] = [];
      for (let offset = 0; ; offset += 1000) {
        const response = await get(`/v1/${resource}?limit=1000&offset=${offset}${query ? `&${query}` : ''}`);
        if (response.statusCode !== 200) throw new Error(`${resource} : ${response.statusCode} ${response.body}`);
        const body = response.json();
        rows.push(...body.data);
        if (!body.pagination.has_more) return rows;
      }
    },
    /** A CSV export, parsed: header and rows of text cells. */
    async csv(resource: string, query = ''): Promise<{ header: string[]; rows: string[][] }> {
      const response = await get(`/v1/${resource}?format=csv${query ? `&${query}` : ''}`);
      if (response.statusCode !== 200) throw new Error(`${resource} CSV : ${response.statusCode} ${response.body}`);
      const text = response.body;
      if (!text.startsWith('\uFEFF')) throw new Error('CSV sans BOM');
      const parsed = Papa.parse<string[]>(text.slice(1), { skipEmptyLines: true });
      const [header, ...rows] = parsed.data;
      return { header: header!, rows };
    },
  };
}

/** A JSON row as the CSV writes it: null empty, numbers as text, formula-looking text quoted. */
export function asCsvCells(row: Row, columns: string[]): string[] {
  return columns.map((column) => {
    const value = row[column];
    if (value === null || value === undefined) return '';
    const text = String(value);
    return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  });
}
