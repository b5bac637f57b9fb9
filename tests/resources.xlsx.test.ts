import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline, Transform } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { strFromU8, unzipSync } from 'fflate';
import { sql } from 'kysely';
import Papa from 'papaparse';
import readXlsxFile from 'read-excel-file/node';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { copyOut } from '../db/copy';
import type { ColumnType } from '../db/resources/definition';
import { xlsxFromCopy, xlsxFromRows } from '../src/formats/xlsx/workbook';
import { loadOpenapiDocument } from '../src/openapi-document';
import { addLearner, createOrgWithKeys } from './support/factories';
import { client, seededOrganisation } from './support/learning-factories';
import { useTestApp, useTestAppOn } from './support/lifecycle';
import { resourceNames } from './support/list-resources';

// Workbooks are read back with read-excel-file and their parts with fflate, not with the code that
// writes them; LibreOffice, when installed, opens them as a user's spreadsheet would.
const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
const cappedFixture = useTestAppOn(fixture, { rateLimitPerMinute: 100_000, aggregationCap: 5 });
let org: Awaited<ReturnType<typeof seededOrganisation>>;
let api: ReturnType<typeof client>;
let capped: ReturnType<typeof client>;

beforeAll(async () => {
  org = await seededOrganisation(fixture.db, { name: 'Formations Tableur', learners: 25, seed: 16 });
  api = client(fixture.app, org.readKey);
  capped = client(cappedFixture.app, org.readKey);
}, 120_000);

const xlsxMediaType = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const everyResource = resourceNames;
type ResourceName = string;

type Cell = string | number | boolean | Date | null;

interface Workbook {
  sheets: { name: string; rows: Cell[][] }[];
  /** The XML parts of the file, by path (`xl/worksheets/sheet1.xml`, `xl/styles.xml`...). */
  parts: Record<string, string>;
}

/** The CRC-32 and size that each entry of a zip declares (in its central directory), by path. */
function declaredEntries(file: Buffer): Record<string, { crc: number; size: number }> {
  const directoryEnd = file.lastIndexOf(Buffer.from('PK\x05\x06', 'latin1'));
  const entries: Record<string, { crc: number; size: number }> = {};
  let at = file.readUInt32LE(directoryEnd + 16);
  for (let entry = 0; entry < file.readUInt16LE(directoryEnd + 10); entry++) {
    expect(file.toString('latin1', at, at + 4)).toBe('PK\x01\x02');
    const nameLength = file.readUInt16LE(at + 28);
    entries[file.toString('utf8', at + 46, at + 46 + nameLength)] = { crc: file.readUInt32LE(at + 16), size: file.readUInt32LE(at + 24) };
    at += 46 + nameLength + file.readUInt16LE(at + 30) + file.readUInt16LE(at + 32);
  }
  return entries;
}

/** A workbook's sheets and parts, once each part is checked against the CRC-32 and size its zip entry declares (a reader checks them). */
async function readWorkbook(file: Buffer): Promise<Workbook> {
  const sheets = await readXlsxFile(file, { trim: false });
  const unzipped = unzipSync(new Uint8Array(file));
  const declared = declaredEntries(file);
  expect(Object.keys(declared).sort()).toEqual(Object.keys(unzipped).sort());
  for (const [name, bytes] of Object.entries(unzipped))
    expect(declared[name], name).toEqual({ crc: zlib.crc32(bytes), size: bytes.length });
  const parts = Object.fromEntries(Object.entries(unzipped).map(([name, bytes]) => [name, strFromU8(bytes)]));
  return { sheets: sheets.map((sheet) => ({ name: sheet.sheet, rows: sheet.data as unknown as Cell[][] })), parts };
}

async function workbookOf(resource: ResourceName, query = '', from = () => api): Promise<Workbook> {
  const response = await from().get(`/v1/${resource}?format=xlsx${query ? `&${query}` : ''}`);
  expect(response.statusCode, response.body.slice(0, 200)).toBe(200);
  expect(response.headers['content-type']).toBe(xlsxMediaType);
  return readWorkbook(response.rawPayload);
}

/**
 * The type the contract (openapi.yaml, not the resource definitions that write the cells) gives
 * each column of a resource's rows: integers, numbers, dates, the `YYYY-MM-DD HH:MM` date-times,
 * and text. The summary's columns are the dotted paths of its leaves.
 */
function contractColumnTypes(resource: ResourceName): Record<string, ColumnType> {
  const document = loadOpenapiDocument();
  const resolve = (schema: Record<string, any>): Record<string, any> =>
    schema.$ref
      ? resolve(
          schema.$ref
            .split('/')
            .slice(1)
            .reduce((node: any, key: string) => node[key], document),
        )
      : schema;
  const envelope = resolve(document.paths[`/${resource}`].get.responses['200'].content['application/json'].schema);
  const typeOf = (property: Record<string, any>): ColumnType => {
    const type = [property.type].flat().find((name) => name !== 'null');
    if (type === 'integer') return 'integer';
    if (type === 'number') return 'decimal';
    if (property.format === 'date') return 'date';
    if (property.pattern === '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}$') return 'dateTime';
    return 'text';
  };
  const leaves = (schema: Record<string, any>, prefix: string): [string, ColumnType][] =>
    Object.entries<Record<string, any>>(resolve(schema).properties).flatMap(([key, property]) =>
      resolve(property).type === 'object' ? leaves(property, `${prefix}${key}.`) : [[`${prefix}${key}`, typeOf(resolve(property))]],
    );
  const rows = resource === 'summary' ? envelope.properties.data : envelope.properties.data.items;
  return Object.fromEntries(leaves(rows, ''));
}

/** Whether a cell is what its column's type asks: a whole number, a number, a date at midnight, a date-time, a text. */
function hasType(cell: Cell, type: ColumnType): boolean {
  if (type === 'integer') return typeof cell === 'number' && Number.isInteger(cell);
  if (type === 'decimal') return typeof cell === 'number';
  if (type === 'date') return cell instanceof Date && cell.getTime() % 86_400_000 === 0;
  if (type === 'dateTime') return cell instanceof Date;
  return typeof cell === 'string';
}

/**
 * A cell as the API's CSV writes the same value: dates in the API's formats (a spreadsheet date is
 * a fraction of days, read back to the millisecond: rounded to the minute), texts that start like a
 * formula behind the CSV's guard apostrophe, null as an empty cell.
 */
function asCsvText(cell: Cell, type: ColumnType): string {
  if (cell === null) return '';
  if (cell instanceof Date) {
    const minute = new Date(Math.round(cell.getTime() / 60_000) * 60_000).toISOString();
    return type === 'date' ? minute.slice(0, 10) : `${minute.slice(0, 10)} ${minute.slice(11, 16)}`;
  }
  const text = String(cell);
  return typeof cell === 'string' && /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

/** The `<col>` widths of a sheet, in column order. */
function columnWidths(sheetXml: string): number[] {
  const widths: number[] = [];
  for (const [, min, max, width] of sheetXml.matchAll(/<col min="(\d+)" max="(\d+)" width="([\d.]+)"/g)) {
    for (let column = Number(min); column <= Number(max); column++) widths[column - 1] = Number(width);
  }
  return widths;
}

/** Whether the cell at an address of the sheet is styled with a bold font. */
function isBold(workbook: Workbook, sheetXml: string, address: string): boolean {
  const style = Number(new RegExp(`<c r="${address}"(?: s="(\\d+)")?`).exec(sheetXml)?.[1] ?? 0);
  const styles = workbook.parts['xl/styles.xml']!;
  const cellFormats = [.../<cellXfs[^>]*>(.*?)<\/cellXfs>/s.exec(styles)![1]!.matchAll(/<xf [^>]*fontId="(\d+)"/g)].map((m) =>
    Number(m[1]),
  );
  const fonts = [.../<fonts[^>]*>(.*?)<\/fonts>/s.exec(styles)![1]!.matchAll(/<font>(.*?)<\/font>|<font\/>/gs)].map((m) => m[1] ?? '');
  return /<b\/>|<b val="(1|true)"\/>/.test(fonts[cellFormats[style]!]!);
}

describe('format=xlsx', () => {
  it.each(everyResource)(
    "%s: the workbook holds the CSV's header and rows, each cell of the type the contract gives its column",
    async (resource) => {
      const query = resource === 'summary' || resource === 'users' ? '' : 'year=2025';
      const [csv, workbook] = await Promise.all([api.csv(resource, query), workbookOf(resource, query)]);
      const types = contractColumnTypes(resource);
      expect(workbook.sheets.map((sheet) => sheet.name)).toEqual([resource]);
      const [header, ...rows] = workbook.sheets[0]!.rows;
      expect(header).toEqual(csv.header);
      expect(header).toEqual(Object.keys(types));
      expect(rows.length).toBeGreaterThan(0);
      for (const [index, row] of rows.entries()) {
        for (const [column, cell] of row.entries()) {
          const type = types[csv.header[column]!]!;
          if (cell !== null && !hasType(cell, type))
            throw new Error(`${resource} row ${index + 2}, ${csv.header[column]}: ${String(cell)} is not ${type}`);
        }
      }
      const asCsv = rows.map((row) => csv.header.map((name, column) => asCsvText(row[column] ?? null, types[name]!)));
      expect(asCsv).toEqual(csv.rows);
    },
    60_000,
  );

  it('writes decimals, dates, date-times, Oui/Non and null as a spreadsheet user needs them', async () => {
    const documents = (await workbookOf('documents', 'year=2025')).sheets[0]!.rows;
    const hours = documents.slice(1).map((row) => row[6]);
    // `4.5` stays a number in a French Excel, where a text "4.5" would drop out of a SUM.
    expect(hours.some((value) => typeof value === 'number' && !Number.isInteger(value))).toBe(true);
    expect(documents.slice(1).every((row) => row[5] instanceof Date)).toBe(true);

    const logins = (await workbookOf('logins', 'year=2025')).sheets[0]!.rows.slice(1);
    const json = await api.all('logins', 'year=2025');
    // Paris wall-clock time, as the JSON and CSV show it, not the UTC instant.
    expect(asCsvText(logins[0]![2]!, 'dateTime')).toBe(json[0]!.debut);
    expect(logins.some((row) => row[2] instanceof Date && row[2].getUTCHours() !== 0)).toBe(true);

    const attendance = (await workbookOf('attendance', 'year=2025')).sheets[0]!.rows.slice(1);
    expect(new Set(attendance.map((row) => row[7]))).toEqual(new Set(['Oui', 'Non']));

    const learners = await workbookOf('learners', 'year=2025');
    const learnerRows = await api.all('learners', 'year=2025');
    const withoutScore = learnerRows.findIndex((row) => row.score_moyen === null);
    expect(withoutScore).toBeGreaterThanOrEqual(0);
    expect(learners.sheets[0]!.rows[withoutScore + 1]![13]).toBeNull();
  });

  it('answers an attachment named like the CSV, with the spreadsheet media type', async () => {
    for (const [resource, query, fileName] of [
      ['logins', 'year=2025', 'logins-2025.xlsx'],
      ['quiz-answers', 'year=2026', 'quiz-answers-2026.xlsx'],
      ['users', '', 'users.xlsx'],
      ['summary', '', 'summary.xlsx'],
    ] as const) {
      const response = await api.get(`/v1/${resource}?format=xlsx${query ? `&${query}` : ''}`);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe(xlsxMediaType);
      expect(response.headers['content-disposition']).toBe(`attachment; filename="${fileName}"`);
      expect(response.rawPayload.subarray(0, 4).toString('latin1')).toBe('PK\u0003\u0004');
    }
  });

  it('freezes a bold header row, sizes each column to its header and first rows, and names the sheet after the resource', async () => {
    const csv = await api.csv('quiz-answers', 'year=2025');
    const workbook = await workbookOf('quiz-answers', 'year=2025');
    const sheet = workbook.parts['xl/worksheets/sheet1.xml']!;
    expect(workbook.parts['xl/workbook.xml']).toMatch(/<sheet [^>]*name="quiz-answers"/);
    expect(sheet).toMatch(/<pane [^>]*ySplit="1"[^>]*state="frozen"/);
    expect(sheet).toMatch(/<pane [^>]*topLeftCell="A2"/);
    for (const column of ['A', 'E', 'P']) {
      expect(isBold(workbook, sheet, `${column}1`), `${column}1`).toBe(true);
      expect(isBold(workbook, sheet, `${column}2`), `${column}2`).toBe(false);
    }
    const widths = columnWidths(sheet);
    expect(widths).toHaveLength(csv.header.length);
    for (const [column, name] of csv.header.entries()) {
      const widest = Math.max(name.length, ...csv.rows.slice(0, 1000).map((row) => row[column]!.replace(/^'/, '').length));
      // Room for the widest of the first rows, up to 60 characters (longer texts are cut at the edge of
      // the cell), and never narrower than a date.
      expect(widths[column], name).toBeGreaterThanOrEqual(Math.max(Math.min(widest, 60), 10));
      expect(widths[column], name).toBeLessThanOrEqual(Math.max(Math.min(widest, 60) + 3, 10));
    }
    expect(Math.max(...widths)).toBeGreaterThan(30);
  });

  it('writes a text that starts like a formula as a text, never as a formula: no guard prefix is needed', async () => {
    const other = await createOrgWithKeys(fixture.db, { name: 'Organisme des formules' });
    const names = ['=1+1', '+33 6 12 34 56 78', '-2', '@SOMME(A1:A2)', '=HYPERLINK("https://exemple.fr";"clic")'];
    for (const [index, name] of names.entries()) {
      await addLearner(fixture.db, other.orgId, { email: `formule${index}@exemple.fr`, name, at: `2026-03-0${index + 1} 10:00` });
    }
    const formulas = client(fixture.app, other.readKey);
    const workbook = await workbookOf('users', '', () => formulas);
    expect(workbook.sheets[0]!.rows.slice(1).map((row) => row[0])).toEqual(names);
    expect(workbook.parts['xl/worksheets/sheet1.xml']).not.toMatch(/<f[ >]/);
    // The CSV, which a spreadsheet would run, guards the same texts.
    expect((await formulas.csv('users')).rows.map((row) => row[0])).toEqual(names.map((name) => `'${name}`));
  });

  it('keeps control characters, markup and spaces of a text: escaped in the XML 1.0 of the sheet, read back as they were', async () => {
    const other = await createOrgWithKeys(fixture.db, { name: 'Organisme des caractères' });
    const names = [
      'Zoé\u0001 Martin\u001F',
      '<b>Léa</b> & Cie',
      '  espaces autour  ',
      'ligne\r\nsuivante\tet tabulation',
      'littéral _x0041_ et _X005f_ et _x00e9_',
      'saut\u000B de page\u000C, non-caractère \uFFFE',
    ];
    for (const [index, name] of names.entries()) {
      await addLearner(fixture.db, other.orgId, { email: `caractere${index}@exemple.fr`, name, at: `2026-03-0${index + 1} 10:00` });
    }
    const characters = client(fixture.app, other.readKey);
    const workbook = await workbookOf('users', '', () => characters);
    const sheet = workbook.parts['xl/worksheets/sheet1.xml']!;
    // Nothing XML 1.0 forbids, even as a reference: the characters are the format's `_xHHHH_`, and a
    // text's own `_xHHHH_` has its underscore escaped, so that a spreadsheet shows it as it is.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters XML 1.0 forbids are what this looks for.
    expect(sheet).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|&#(?:[0-8]|1[124-9]|2\d|3[01]);/);
    for (const escaped of [
      'Zoé_x0001_ Martin_x001F_',
      '&lt;b&gt;Léa&lt;/b&gt; &amp; Cie',
      '<t xml:space="preserve">  espaces autour  </t>',
    ]) {
      expect(sheet).toContain(escaped);
    }
    expect(sheet).toContain('ligne&#13;\nsuivante\tet tabulation');
    expect(sheet).toContain('littéral _x005F_x0041_ et _X005f_ et _x005F_x00e9_');
    expect(sheet).toContain('saut_x000B_ de page_x000C_, non-caractère _xFFFE_');
    // Read back (read-excel-file decodes the escapes as Excel and LibreOffice do), as the CSV holds them.
    expect(workbook.sheets[0]!.rows.slice(1).map((row) => row[0])).toEqual(names);
    expect((await characters.csv('users')).rows.map((row) => row[0])).toEqual(names);
  });

  it('holds the same rows as the CSV under every filter: programme, updated_since, one learner, the cap', async () => {
    const programme = org.seeded.programmes[0]!;
    const email = (await api.all('learners', 'year=2025'))[3]!.email as string;
    const cases: [client: () => ReturnType<typeof client>, resource: ResourceName, query: string][] = [
      [() => api, 'progress', `year=2025&programme=${programme}&updated_since=2025-06-01`],
      [() => api, 'quiz-answers', `year=2025&email=${email}`],
      [() => api, 'logins', `year=2026&updated_since=2026-10-01`],
      [() => api, 'summary', `email=${email}`],
      [() => capped, 'evaluations', 'year=2025'],
      [() => capped, 'users', ''],
    ];
    for (const [from, resource, query] of cases) {
      const [csv, workbook] = await Promise.all([from().csv(resource, query), workbookOf(resource, query, from)]);
      const types = contractColumnTypes(resource);
      const rows = workbook.sheets[0]!.rows.slice(1).map((row) =>
        csv.header.map((name, column) => asCsvText(row[column] ?? null, types[name]!)),
      );
      expect(rows, `${resource}?${query}`).toEqual(csv.rows);
      expect(rows.length, `${resource}?${query}`).toBeGreaterThan(0);
    }
    expect((await workbookOf('evaluations', 'year=2025', () => capped)).sheets[0]!.rows).toHaveLength(1 + 5);
  });

  it('answers a bad filter or an unknown learner with the usual JSON error, before any workbook', async () => {
    for (const [url, status, mention] of [
      ['/v1/logins?format=xlsx&year=abc', 400, 'year'],
      ['/v1/logins?format=xlsx&email=personne@exemple.fr', 404, ''],
      ['/v1/progress?format=xlsx&programme=inconnu', 400, 'programme'],
      ['/v1/summary?format=xlsx&user_id=00000000-0000-4000-8000-000000000000', 404, ''],
      ['/v1/logins?format=xls', 400, 'format'],
    ] as const) {
      const response = await api.get(url);
      expect(response.statusCode, url).toBe(status);
      expect(response.headers['content-type'], url).toMatch(/^application\/json/);
      expect(response.headers['content-disposition'], url).toBeUndefined();
      expect(response.json().error, url).toContain(mention);
    }
  });
});

describe('the workbook stream', () => {
  const columns = [
    { name: 'texte', type: 'text' },
    { name: 'nombre', type: 'integer' },
  ] as const;
  // Rows that compress poorly (hashes), so that the zip's few buffers fill with few rows when nobody reads.
  const noise = (n: number) => createHash('sha256').update(String(n)).digest('hex');

  function chunkSource(chunks: number, rowsPerChunk: number) {
    const state = { pulled: 0, closed: false };
    async function* source() {
      try {
        for (let chunk = 0; chunk < chunks; chunk++) {
          state.pulled += 1;
          yield Array.from({ length: rowsPerChunk }, (_, i) => ({
            texte: noise(chunk * rowsPerChunk + i),
            nombre: chunk * rowsPerChunk + i,
          }));
        }
      } finally {
        state.closed = true;
      }
    }
    return { state, chunks: source() };
  }

  async function bytesOf(stream: NodeJS.ReadableStream): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of stream) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }

  it('reads its rows at the pace of its reader: unread, it holds a few chunks, not the whole export', async () => {
    const { state, chunks } = chunkSource(80, 1000);
    const stream = xlsxFromRows('logins', columns, chunks);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // What the zip's buffers hold (about 8 chunks), not the 80 that an export without backpressure reads.
    expect(state.pulled).toBeLessThan(20);
    const workbook = await readWorkbook(await bytesOf(stream));
    expect(state.pulled).toBe(80);
    expect(state.closed).toBe(true);
    const rows = workbook.sheets[0]!.rows;
    expect(rows).toHaveLength(1 + 80_000);
    expect(rows[80_000]).toEqual([noise(79_999), 79_999]);
  });

  it('writes a row larger than the pieces of XML that go to zlib (a text of 1 MB, escaped to several), between rows that fit', async () => {
    const large = 'a<b&c>\u0001_x0041_'.repeat(70_000);
    async function* rows() {
      yield [{ texte: 'avant', nombre: 1 }];
      yield [
        { texte: large, nombre: 2 },
        { texte: 'après', nombre: 3 },
      ];
    }
    // Read back from the sheet's XML: read-excel-file parses in chunks that it halves while the
    // machine is slow, recursing once per chunk, and a loaded machine made it overflow its stack.
    const sheet = strFromU8(unzipSync(new Uint8Array(await bytesOf(xlsxFromRows('logins', columns, rows()))))['xl/worksheets/sheet1.xml']!);
    const cellTexts = [...sheet.matchAll(/<c r="A\d+"[^>]*><is><t[^>]*>(.*?)<\/t><\/is><\/c>/gs)].map(([, text]) =>
      text!
        .replace(/_x([0-9A-F]{4})_/g, (_escape, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
        .replace(/&lt;|&gt;|&amp;|&#13;/g, (entity) => ({ '&lt;': '<', '&gt;': '>', '&amp;': '&', '&#13;': '\r' })[entity]!),
    );
    expect(cellTexts).toEqual(['texte', 'avant', large, 'après']);
    expect([...sheet.matchAll(/<c r="B(\d+)"><v>(\d+)<\/v><\/c>/g)].map(([, row, value]) => [row, value])).toEqual([
      ['2', '1'],
      ['3', '2'],
      ['4', '3'],
    ]);
  });

  it('closes its source when the reader goes away', async () => {
    const { state, chunks } = chunkSource(80, 1000);
    const stream = xlsxFromRows('logins', columns, chunks);
    await new Promise((resolve) => stream.once('readable', resolve));
    stream.destroy();
    await vi.waitFor(() => expect(state.closed).toBe(true));
    expect(state.pulled).toBeLessThan(20);
  });

  it("goes on in a second sheet, with the same header, past the rows a sheet holds (Excel's 1,048,575)", async () => {
    const { chunks } = chunkSource(5, 500);
    const workbook = await readWorkbook(await bytesOf(xlsxFromRows('logins', columns, chunks, { rowsPerSheet: 1000 })));
    expect(workbook.sheets.map((sheet) => sheet.name)).toEqual(['logins', 'logins (2)', 'logins (3)']);
    expect(workbook.sheets.map((sheet) => sheet.rows.length)).toEqual([1001, 1001, 501]);
    const numbers = workbook.sheets.flatMap((sheet) => {
      expect(sheet.rows[0]).toEqual(['texte', 'nombre']);
      return sheet.rows.slice(1).map((row) => row[1]);
    });
    expect(numbers).toEqual(Array.from({ length: 2500 }, (_, n) => n));
  });
});

describe('the workbook of a COPY', () => {
  const columns = [
    { name: 'texte', type: 'text' },
    { name: 'nombre', type: 'integer' },
  ] as const;
  // Rows that compress poorly, as PostgreSQL's binary COPY of text fields gives an export's rows.
  const numbered = (rows: number) =>
    sql`select md5(n::text) as texte, n::text as nombre from generate_series(0, ${rows - 1}) as n order by n`;
  const md5 = (n: number) => createHash('md5').update(String(n)).digest('hex');

  /** The COPY of the rows, and the bytes the workbook has taken from it so far. */
  async function countedCopy(rows: number) {
    const copy = await copyOut(fixture.db, numbered(rows));
    const taken = { bytes: 0 };
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        taken.bytes += chunk.length;
        done(null, chunk);
      },
    });
    // Either end closes the other: a workbook that stops destroys the COPY.
    return { copy, taken, source: pipeline(copy, counter, () => undefined) };
  }

  it('reads the COPY at the pace of its reader: unread, it takes a few hundred kilobytes of it, not the whole export', async () => {
    const { copy, taken, source } = await countedCopy(100_000);
    const stream = xlsxFromCopy('logins', columns, source);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // 100,000 rows are 4.7 MB of COPY.
    expect(taken.bytes).toBeGreaterThan(0);
    expect(taken.bytes).toBeLessThan(1_500_000);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(taken.bytes).toBeGreaterThan(4_500_000);
    expect(copy.readableEnded).toBe(true);
    const rows = (await readWorkbook(Buffer.concat(chunks))).sheets[0]!.rows;
    expect(rows).toHaveLength(1 + 100_000);
    expect(rows[1]).toEqual([md5(0), 0]);
    expect(rows[100_000]).toEqual([md5(99_999), 99_999]);
  });

  it('stops the COPY when the reader goes away', async () => {
    const { copy, taken, source } = await countedCopy(100_000);
    const stream = xlsxFromCopy('logins', columns, source);
    await new Promise((resolve) => stream.once('readable', resolve));
    stream.destroy();
    await vi.waitFor(() => expect(copy.destroyed).toBe(true));
    expect(taken.bytes).toBeLessThan(1_500_000);
  });

  it('splits the COPY into sheets past the rows a sheet holds, numbering each sheet from its header', async () => {
    const { source } = await countedCopy(2500);
    const chunks: Buffer[] = [];
    for await (const chunk of xlsxFromCopy('logins', columns, source, { rowsPerSheet: 1000 })) chunks.push(chunk as Buffer);
    const workbook = await readWorkbook(Buffer.concat(chunks));
    expect(workbook.sheets.map((sheet) => sheet.rows.length)).toEqual([1001, 1001, 501]);
    expect(workbook.sheets.flatMap((sheet) => sheet.rows.slice(1).map((row) => row[1]))).toEqual(Array.from({ length: 2500 }, (_, n) => n));
    expect(workbook.parts['xl/worksheets/sheet2.xml']).toMatch(
      /<row r="1001"><c r="A1001" t="inlineStr"><is><t>[0-9a-f]{32}<\/t><\/is><\/c><c r="B1001"><v>1999<\/v><\/c><\/row><\/sheetData>/,
    );
  });
});

const sofficeAvailable = spawnSync('soffice', ['--version'], { stdio: 'ignore' }).status === 0;

describe('LibreOffice', () => {
  it.runIf(sofficeAvailable)(
    'opens the workbooks headless (soffice --convert-to csv) and reads the same values as the API CSV',
    async () => {
      const directory = await mkdtemp(path.join(tmpdir(), 'xlsx-libreoffice-'));
      try {
        const exports: [ResourceName, string][] = [
          ['documents', 'year=2025'],
          ['logins', 'year=2025'],
          ['learners', 'year=2025'],
          ['summary', ''],
        ];
        for (const [resource, query] of exports) {
          const response = await api.get(`/v1/${resource}?format=xlsx${query ? `&${query}` : ''}`);
          await writeFile(path.join(directory, `${resource}.xlsx`), response.rawPayload);
        }
        // Comma, double quote, UTF-8: the API's CSV dialect. A profile of its own, so that no other
        // LibreOffice running on the machine holds its lock.
        await promisify(execFile)(
          'soffice',
          [
            `-env:UserInstallation=${pathToFileURL(path.join(directory, 'profile')).href}`,
            '--headless',
            '--convert-to',
            'csv:Text - txt - csv (StarCalc):44,34,76,1',
            '--outdir',
            path.join(directory, 'csv'),
            ...exports.map(([resource]) => path.join(directory, `${resource}.xlsx`)),
          ],
          { timeout: 90_000 },
        );
        for (const [resource, query] of exports) {
          const converted = Papa.parse<string[]>(await readFile(path.join(directory, 'csv', `${resource}.csv`), 'utf8'), {
            skipEmptyLines: true,
          }).data;
          const csv = await api.csv(resource, query);
          expect(converted[0], resource).toEqual(csv.header);
          // LibreOffice writes what the cells show: the numbers, and dates in the workbook's formats.
          expect(converted.slice(1), resource).toEqual(csv.rows.map((row) => row.map((cell) => cell.replace(/^'(?=[=+\-@\t\r])/, ''))));
        }
      } finally {
        await rm(directory, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
