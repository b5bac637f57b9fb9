import { once } from 'node:events';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { type RawBuilder, sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DB } from '../db/connection';
import { copyOut, copyOutWhole } from '../db/copy';
import { findLearner } from '../db/learners';
import { findProgrammeId } from '../db/programmes';
import { type ResourceDefinition, type ResourceFilter, typedColumns } from '../db/resources/definition';
import { copyResourcePage, copyResourceRows } from '../db/resources/list';
import { textFieldsOf } from '../db/resources/rendering';
import { csvFromCopy } from '../src/formats/csv';
import { jsonRows } from '../src/formats/json-rows';
import { rowsOfCopy } from '../src/formats/row-batch';
import { anErrorBody, bearer } from './support/app';
import { seededOrganisation } from './support/learning-factories';
import { useTestApp, useTestAppOn, useTestDatabase } from './support/lifecycle';
import { listResource, listResourceNames } from './support/list-resources';
import { oracleCsv, oracleExportRows } from './support/wire-oracle';

// PostgreSQL writes each field of a CSV export or a JSON page (binary COPY) and the server passes
// the bytes on, quoting and guarding texts as it copies them into a CSV, escaping them into JSON:
// the files must be, byte for byte, what the server wrote from row objects before
// (tests/support/wire-oracle.ts), and the pages what JSON.stringify wrote of the envelope.

const cap = 7;
const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
const cappedFixture = useTestAppOn(fixture, { rateLimitPerMinute: 100_000, aggregationCap: cap });
let org: Awaited<ReturnType<typeof seededOrganisation>>;

/** Texts a spreadsheet could take for something else, or that the CSV must quote, and other characters to carry whole. */
const trickyTexts = [
  '=1+1',
  '+33 6 12 34 56 78',
  '-moins',
  '@SOMME(A1:A3)',
  '\tTabulation',
  '\rRetour',
  ' espace devant',
  'espace derrière ',
  'virgule, dedans',
  'guillemet " dedans',
  '"entre guillemets"',
  'ligne\nsuivante',
  'fin de ligne\r\nWindows',
  'BOM\uFEFFdedans',
  'séparateurs\u2028de\u2029ligne',
  'contrôle\u0001\u001f\u007f',
  'barre \\ oblique',
  'émoji 😀 et 𝄞',
  '',
  "apostrophe l'a",
  '=HYPERLINK("http://exemple.fr","clic")',
];

beforeAll(async () => {
  org = await seededOrganisation(fixture.db, { name: 'Formations Rendu', learners: 60, seed: 11 });
  const db = fixture.db;
  const pick = (index: number) => trickyTexts[index % trickyTexts.length]!;
  // Learners' names (one null), a few emails, titles, comments and answers of every kind.
  const members = await db
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select(['a.id', 'a.email'])
    .where('m.org_id', '=', org.orgId)
    .orderBy('a.email')
    .execute();
  for (const [index, member] of members.entries()) {
    const name = index === trickyTexts.length ? null : pick(index);
    await db.updateTable('accounts').set({ name }).where('id', '=', member.id).execute();
  }
  for (const [index, prefix] of ['+plus', '-moins', '=egal', '@arobase'].entries()) {
    await db
      .updateTable('accounts')
      .set({ email: `${prefix}.${index}@exemple.fr` })
      .where('id', '=', members[index * 7]!.id)
      .execute();
  }
  await sql`update programmes set title = ${'=Tableur, "avancé"'} where id = (select id from programmes where org_id = ${org.orgId} order by slug limit 1)`.execute(
    db,
  );
  await sql`update modules set title = ' ' || title where org_id = ${org.orgId}`.execute(db);
  await sql`update lessons set title = title || ' ' where org_id = ${org.orgId} and position % 2 = 0`.execute(db);
  await sql`update quiz_questions set wording = '-' || wording || ${'\n"?"'} where org_id = ${org.orgId} and position % 3 = 0`.execute(db);
  const comment = (table: string, column: string) =>
    sql`update ${sql.table(table)} t set ${sql.ref(column)} = (${sql`(${sql.val(trickyTexts)}::text[])`})[1 + (abs(hashtext(t.id::text)) % ${trickyTexts.length})]
      where t.org_id = ${org.orgId}`.execute(db);
  await comment('satisfaction_surveys', 'verbatim');
  await comment('tutoring_ratings', 'comment');
  await comment('lesson_ratings', 'comment');
  await comment('logins', 'user_agent');
  await sql`update tutoring_sessions set trainer_name = '+' || trainer_name, title = title || ', groupe "A"' where org_id = ${org.orgId}`.execute(
    db,
  );
  // Hours whose numeric text JavaScript writes otherwise: 12.0 is 12, 0.0 is 0.
  await sql`update documents d set hours = (array[0, 12.0, 4.5, 99999.9, 0.5, 7])[1 + (abs(hashtext(d.id::text)) % 6)]
    where d.org_id = ${org.orgId}`.execute(db);
}, 180_000);

type Resource = string;

/** The filter the server builds for a query string (the learner and programme resolved as the handler does). */
async function filterOf(definition: ResourceDefinition, query: URLSearchParams): Promise<ResourceFilter> {
  const email = query.get('email');
  const programme = query.get('programme');
  return {
    orgId: org.orgId,
    year: Number(query.get('year') ?? 2026),
    updatedSince: definition.filtersByUpdatedSince ? query.get('updated_since') : null,
    membershipId: email ? (await findLearner(fixture.db, org.orgId, { email }))!.membershipId : null,
    programmeId: programme && definition.filtersByProgramme ? await findProgrammeId(fixture.db, org.orgId, programme) : null,
  };
}

async function get(app: typeof fixture.app, url: string) {
  const response = await app.inject({ method: 'GET', url, headers: bearer(org.readKey) });
  expect(response.statusCode, `${url}: ${response.body.slice(0, 200)}`).toBe(200);
  return response;
}

async function expectSameCsv(resource: Resource, query: string, aggregationCap: number) {
  const app = aggregationCap === cap ? cappedFixture.app : fixture.app;
  const response = await get(app, `/v1/${resource}?format=csv&${query}`);
  const definition = listResource(resource);
  const filter = await filterOf(definition, new URLSearchParams(query));
  const rows = await oracleExportRows(fixture.db, definition, filter, filter.membershipId ? null : aggregationCap);
  expect(response.rawPayload.equals(oracleCsv(definition.columns, rows)), `${resource}?${query}: CSV bytes differ`).toBe(true);
  return rows.length;
}

const uncapped = 100_000;

/**
 * A JSON page as the server answers it, and as JSON.stringify wrote it from the rows pg read (the
 * oracle): the same envelope, its rows those of the resource's query in that window.
 */
async function expectSameJsonPage(resource: Resource, query: string, aggregationCap: number): Promise<number> {
  const app = aggregationCap === cap ? cappedFixture.app : fixture.app;
  const response = await get(app, `/v1/${resource}?${query}`);
  const definition = listResource(resource);
  const parameters = new URLSearchParams(query);
  const filter = await filterOf(definition, parameters);
  const limit = Number(parameters.get('limit') ?? 100);
  const offset = Number(parameters.get('offset') ?? 0);
  const allowed = filter.membershipId ? limit : Math.max(0, Math.min(limit, aggregationCap - offset));
  const rows = allowed === 0 ? [] : await definition.select(fixture.db, filter).limit(allowed).offset(offset).execute();
  const { data: _data, ...envelope } = response.json();
  const oracle = JSON.stringify({ ...envelope, data: rows });
  expectSameText(response.rawPayload.toString('utf8'), oracle);
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  return rows.length;
}

describe.each(listResourceNames)('%s', (resource) => {
  it('exports CSV byte for byte as before: BOM, header, quoting, formula guard, CRLF, each year', async () => {
    for (const year of [2025, 2026]) expect(await expectSameCsv(resource, `year=${year}`, uncapped)).toBeGreaterThan(0);
  });

  it('keeps the same bytes under the cap, a programme, updated_since, one learner, and without rows', async () => {
    expect(await expectSameCsv(resource, 'year=2026', cap)).toBe(cap);
    const slug = (
      await sql<{ slug: string }>`select slug from programmes where org_id = ${org.orgId} order by slug limit 1`.execute(fixture.db)
    ).rows[0]!.slug;
    const email = (
      await sql<{ email: string }>`select a.email from memberships m join accounts a on a.id = m.account_id
        where m.org_id = ${org.orgId} order by a.email limit 1`.execute(fixture.db)
    ).rows[0]!.email;
    // 2023 has no rows: a header alone.
    for (const query of [
      `year=2026&programme=${slug}`,
      'year=2026&updated_since=2026-06-01',
      `year=2026&email=${encodeURIComponent(email)}`,
      'year=2023',
    ]) {
      await expectSameCsv(resource, query, cap);
    }
  });

  it('writes JSON pages byte for byte as JSON.stringify wrote the rows: first, deep and last pages, each year', async () => {
    for (const year of [2025, 2026]) {
      const total = (await get(fixture.app, `/v1/${resource}?year=${year}&limit=1`)).json().pagination.total as number;
      expect(total).toBeGreaterThan(0);
      expect(await expectSameJsonPage(resource, `year=${year}&limit=1000`, uncapped)).toBe(Math.min(total, 1000));
      for (const offset of [1, Math.floor(total / 2), Math.max(0, total - 3), total]) {
        await expectSameJsonPage(resource, `year=${year}&limit=17&offset=${offset}`, uncapped);
      }
    }
  });

  it('keeps the same JSON under the cap and past it, a programme, updated_since, one learner, and without rows', async () => {
    expect(await expectSameJsonPage(resource, 'year=2026&limit=5&offset=4', cap)).toBe(3);
    expect(await expectSameJsonPage(resource, 'year=2026&limit=5&offset=9', cap)).toBe(0);
    const email = (
      await sql<{ email: string }>`select a.email from memberships m join accounts a on a.id = m.account_id
        where m.org_id = ${org.orgId} order by a.email limit 1`.execute(fixture.db)
    ).rows[0]!.email;
    const slug = (
      await sql<{ slug: string }>`select slug from programmes where org_id = ${org.orgId} order by slug limit 1`.execute(fixture.db)
    ).rows[0]!.slug;
    for (const query of [
      `year=2026&programme=${slug}&limit=1000`,
      'year=2026&updated_since=2026-06-01&limit=1000',
      `year=2026&email=${encodeURIComponent(email)}&limit=1000`,
      'year=2023',
    ]) {
      await expectSameJsonPage(resource, query, cap);
    }
  });
});

/** Equal texts, or the first difference with a little of its context (not megabytes of text). */
function expectSameText(actual: string, expected: string) {
  let at = 0;
  while (at < actual.length && actual[at] === expected[at]) at++;
  expect(actual.slice(Math.max(0, at - 80), at + 80)).toBe(expected.slice(Math.max(0, at - 80), at + 80));
  expect(actual.length).toBe(expected.length);
}

// A table of every kind of value, exported by the same functions as the resources.
describe('every value of an export', () => {
  const samples = {
    name: 'samples',
    ...typedColumns<{ t: string | null; i: number | null; big: number | null; d: number | null; day: string | null }>({
      t: 'text',
      i: 'integer',
      big: 'integer',
      d: 'decimal',
      day: 'date',
    }),
    filtersByYear: false,
    filtersByUpdatedSince: false,
    filtersByProgramme: false,
    select: (db: DB) =>
      (db as DB)
        .selectFrom('rendering_samples' as never)
        .select(['t', 'i', 'big', 'd', 'day'] as never[])
        .orderBy('n' as never),
  } as unknown as ResourceDefinition;
  const filter: ResourceFilter = { orgId: '', year: 2026, updatedSince: null, membershipId: null, programmeId: null };

  async function fileBytes(db: DB): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of csvFromCopy(samples, await copyResourceRows(db, samples, filter, null))) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }

  /** The CSV file and the JSON rows of the whole table, each as the server wrote it from row objects before. */
  async function expectSameBytes(db: DB) {
    const file = await fileBytes(db);
    const rows = await oracleExportRows(db, samples, filter, null);
    expectSameText(file.toString('latin1'), oracleCsv(samples.columns, rows).toString('latin1'));
    const page = rowsOfCopy((await copyResourcePage(db, samples, filter, 2_000_000, 0, null))!, samples.columns.length);
    expect(page.rows).toBe(rows.length);
    expectSameText(jsonRows(samples, page, '', '').toString('utf8'), JSON.stringify(rows));
    // Within an envelope, non-ASCII included: the rows' bytes are written in one buffer sized ahead.
    const enveloped = jsonRows(samples, page, `{"quantité":${page.rows},"data":`, '}');
    expectSameText(enveloped.toString('utf8'), JSON.stringify({ quantité: rows.length, data: rows }));
  }

  const database = useTestDatabase();

  it('writes every character as the CSV rules and JSON.stringify did, and numbers as JavaScript writes them', async () => {
    const db = database.db;
    await sql`create table rendering_samples (n int primary key, t text, i int, big bigint, d numeric(6, 1), day text)`.execute(db);
    // Every code point of the Basic Multilingual Plane but the surrogates, and astral ones, each alone and amid text.
    await sql`insert into rendering_samples
      select n, case when n % 2 = 0 then chr(n) else 'a' || chr(n) || ' b' end, n - 40000, n::bigint * 1000000000,
        ((n % 1000000) / 10.0)::numeric(6, 1), to_char(date '2026-01-01' + n % 365, 'YYYY-MM-DD')
      from generate_series(1, 1114111) n
      where (n < 55296 or n > 57343) and (n < 65536 or n % 251 = 0)`.execute(db);
    await sql`insert into rendering_samples values (0, null, null, null, null, null), (-1, '', 0, 0, 0, '')`.execute(db);
    for (const [index, text] of trickyTexts.entries()) {
      await sql`insert into rendering_samples values (${-10 - index}, ${text}, ${-index}, ${-index}, ${index / 2}, null)`.execute(db);
    }
    await expectSameBytes(db);
  });

  // A character that needs an escape is found wherever it falls in a text, and its neighbours (one
  // byte off, or UTF-8 bytes) are not taken for one.
  it('finds every character that needs an escape wherever it falls in a text, and nothing else', async () => {
    const db = database.db;
    const escaped = ['"', '\\', ...Array.from({ length: 0x1f }, (_, code) => String.fromCharCode(code + 1))];
    const lookalikes = [' ', '!', '#', '[', ']', '\u007f', 'é', '€', '😀'];
    const texts: string[] = [];
    for (const character of [...escaped, ...lookalikes]) {
      for (let position = 0; position < 9; position++) {
        texts.push(`${'abcdefgh'.slice(0, position)}${character}${'ijklmnop'.slice(position)}`);
      }
      texts.push(character.repeat(9));
    }
    await sql`delete from rendering_samples`.execute(db);
    await sql`insert into rendering_samples (n, t) select n, t from unnest(${texts}::text[]) with ordinality as u(t, n)`.execute(db);
    await expectSameBytes(db);
  });

  it('casts the fields around the query, picked by name, keeping its order (numbers ordered as numbers)', async () => {
    const db = database.db;
    await sql`create table cast_samples (id int primary key, n int, d numeric(6, 1))`.execute(db);
    await sql`insert into cast_samples values (1, 10, 4.5), (2, 9, 12.0), (3, null, null)`.execute(db);
    const columns = typedColumns<{ n: number | null; d: number | null }>({ n: 'integer', d: 'decimal' });
    /** The text fields of the table's rows as `selected` in `order`. */
    const fieldsOf = async (selected: string[], order: string) => {
      const query = (db as DB)
        .selectFrom('cast_samples as c' as never)
        .select(selected as never[])
        .orderBy(order as never);
      const { rows } = await db.executeQuery<Record<string, string | null>>(textFieldsOf(columns, query as never).compile(db));
      return rows.map((row) => [row.n, row.d]);
    };
    const byId = [
      ['10', '4.5'],
      ['9', '12'],
      [null, null],
    ];
    expect(await fieldsOf(['c.n', 'c.d'], 'c.id')).toEqual(byId);
    expect(await fieldsOf(['c.d', 'c.n', 'c.id'], 'c.id')).toEqual(byId);
    // Ordered by the number, not by its text (10 would come before 9).
    expect(await fieldsOf(['c.n', 'c.d'], 'n')).toEqual([byId[1], byId[0], byId[2]]);
  });

  it('writes random texts of the characters that matter as before (property)', async () => {
    const db = database.db;
    const unit = fc.constantFrom('"', ',', '\r', '\n', ' ', '=', '+', '-', '@', '\t', '\uFEFF', '\u2028', '\\', "'", 'a', 'é', '😀');
    const texts = fc.sample(fc.string({ unit, maxLength: 12 }), { numRuns: 3000, seed: 17 });
    await sql`delete from rendering_samples`.execute(db);
    for (let at = 0; at < texts.length; at += 500) {
      const slice = texts.slice(at, at + 500);
      await sql`insert into rendering_samples (n, t) select at + n, t from unnest(${slice}::text[]) with ordinality as u(t, n), (select ${at}::int as at) s`.execute(
        db,
      );
    }
    await expectSameBytes(db);
  });

  it('writes the same file wherever the COPY bytes are cut, rows across several chunks included', async () => {
    const db = database.db;
    const copy = (await copyResourcePage(db, samples, filter, 2_000_000, 0, null))!;
    const cuts = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 4096, 65_536];
    const chunks: Buffer[] = [];
    for (let at = 0, turn = 0; at < copy.length; at += cuts[turn % cuts.length]!, turn++) {
      chunks.push(Buffer.from(copy.subarray(at, at + cuts[turn % cuts.length]!)));
    }
    const parts: Buffer[] = [];
    for await (const part of csvFromCopy(samples, Readable.from(chunks))) parts.push(part as Buffer);
    expect(Buffer.concat(parts).equals(await fileBytes(db))).toBe(true);
  });
});

describe('an export stream (COPY)', () => {
  const database = useTestDatabase();
  const queryTimeoutMs = 300;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const numbers = (count: number, slowAt = 0) =>
    sql`select g::text as n, repeat('x', 200) as filler, pg_sleep(case when g = ${slowAt} then 2 else 0 end)::text as slept from generate_series(1, ${count}) g`;

  // The database is dropped right after these pools end, which may end a backend before it read
  // its pool's goodbye: expected, and not worth a line on stderr.
  const quietly = { onConnectionLost: () => undefined };

  async function withLimitedDb(work: (db: DB) => Promise<void>): Promise<void> {
    const db = createDb(database.url, { poolSize: 1, queryTimeoutMs, ...quietly });
    try {
      await work(db);
    } finally {
      await db.destroy();
    }
  }

  /** The first field of a one-row query, read as a COPY (on a pool of one connection here). */
  async function copiedText(db: DB, query: RawBuilder<unknown>): Promise<string> {
    const batch = rowsOfCopy(await copyOutWhole(db, query), 1);
    return batch.bytes.toString('utf8', batch.starts[0], batch.ends[0]);
  }

  async function copyBackends(db: DB) {
    return (
      await sql<{ n: number; waiting: string | null }>`select count(*)::int as n, max(wait_event) as waiting from pg_stat_activity
        where query like 'copy (%' and state = 'active' and datname = current_database()`.execute(db)
    ).rows[0]!;
  }

  it('outlives the statement time limit when its reader is slow, and the connection gets its limit back', async () => {
    await withLimitedDb(async (db) => {
      const started = Date.now();
      const stream = await copyOut(db, numbers(20_000));
      let bytes = 0;
      let reads = 0;
      for await (const chunk of stream) {
        bytes += (chunk as Buffer).length;
        if (reads++ < 3) await pause(600);
      }
      expect(bytes).toBeGreaterThan(20_000 * 200);
      expect(Date.now() - started).toBeGreaterThan(1500);
      // The pool's one connection is limited again for the next statements.
      expect(await copiedText(db, sql`select current_setting('statement_timeout') as t`)).toBe(`${queryTimeoutMs}ms`);
      await expect(copyOutWhole(db, sql`select pg_sleep(1)::text as t`)).rejects.toThrow(/statement timeout/);
    });
  });

  it('follows its reader: PostgreSQL waits on the socket while the reader pauses', async () => {
    await withLimitedDb(async (db) => {
      const observer = createDb(database.url, { poolSize: 1, ...quietly });
      try {
        const stream = await copyOut(db, numbers(200_000));
        await pause(1000);
        // Far more than the socket buffers hold: PostgreSQL is blocked writing, not done.
        expect(await copyBackends(observer)).toEqual({ n: 1, waiting: 'ClientWrite' });
        let bytes = 0;
        for await (const chunk of stream) bytes += (chunk as Buffer).length;
        expect(bytes).toBeGreaterThan(200_000 * 200);
      } finally {
        await observer.destroy();
      }
    });
  });

  it('fails fast when a piece does not come in time, and its connection is replaced', async () => {
    await withLimitedDb(async (db) => {
      const started = Date.now();
      const reading = (async () => {
        for await (const _chunk of await copyOut(db, numbers(3000, 1500))) {
          // Row 1,500 sleeps 2 s in PostgreSQL: past the 1.3 s the reader waits for output.
        }
      })();
      await expect(reading).rejects.toThrow(/Query read timeout/);
      expect(Date.now() - started).toBeLessThan(2500);
      // The pool's one connection was closed, and a new one serves.
      expect(await copiedText(db, sql`select 1::text as t`)).toBe('1');
    });
  });

  it('stops the COPY and frees its connection when the reader goes away', async () => {
    await withLimitedDb(async (db) => {
      const observer = createDb(database.url, { poolSize: 1, ...quietly });
      try {
        const stream: Readable = await copyOut(db, numbers(500_000));
        stream.destroy();
        await once(stream, 'close');
        // The pool's one connection serves at once, and no COPY runs on any connection any more.
        expect(await copiedText(db, sql`select 1::text as t`)).toBe('1');
        await expect.poll(async () => (await copyBackends(observer)).n, { timeout: 5000 }).toBe(0);
      } finally {
        await observer.destroy();
      }
    });
  });

  it('starts before the answer: a failing query is an error answer, never a cut file', async () => {
    await expect(copyOut(database.db, sql`select 1 / (g - 1) from generate_series(1, 3) g`)).rejects.toThrow(/division by zero/);
    const stream = await copyOut(database.db, textFieldsOf({ columns: ['n'], columnTypes: { n: 'integer' } }, sql`select 1 as n` as never));
    stream.destroy();
  });
});

describe('a CSV export over HTTP', () => {
  // Enough rows for an export that fills the socket buffers of a client that stops reading.
  const large = useTestApp({ rateLimitPerMinute: 100_000 });
  let readKey: string;
  beforeAll(async () => {
    readKey = (await seededOrganisation(large.db, { name: 'Formations Export', learners: 4000, seed: 5 })).readKey;
  }, 180_000);

  const copyBackends = async () =>
    (
      await sql<{ n: number; waiting: string | null }>`select count(*)::int as n, max(wait_event) as waiting from pg_stat_activity
        where query like 'copy (%' and state = 'active' and datname = current_database()`.execute(large.db)
    ).rows[0]!;

  it('follows a client that stops reading, and stops its COPY when the client goes away', async () => {
    const address = await large.app.listen({ port: 0, host: '127.0.0.1' });
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(address).port) });
    await once(socket, 'connect');
    socket.write(`GET /v1/quiz-answers?format=csv&year=2026 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${readKey}\r\n\r\n`);
    const [first] = (await once(socket, 'data')) as [Buffer];
    expect(first.toString('latin1')).toMatch(/^HTTP\/1.1 200/);
    socket.pause();
    // The client reads nothing more: PostgreSQL ends up waiting on its socket, the export in the middle.
    await expect.poll(copyBackends, { timeout: 10_000 }).toEqual({ n: 1, waiting: 'ClientWrite' });
    socket.destroy();
    await expect.poll(async () => (await copyBackends()).n, { timeout: 5000 }).toBe(0);
    // The pool still serves.
    expect((await large.app.inject({ url: '/v1/logins?limit=1', headers: bearer(readKey) })).statusCode).toBe(200);
  });

  it('answers an error in the one error shape, not a cut file, when its COPY cannot start', async () => {
    await sql`alter table quiz_answers rename to quiz_answers_away`.execute(large.db);
    try {
      const response = await large.app.inject({ url: '/v1/quiz-answers?format=csv&year=2026', headers: bearer(readKey) });
      expect(response.statusCode).toBe(500);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.json()).toEqual(anErrorBody(expect.any(String)));
    } finally {
      await sql`alter table quiz_answers_away rename to quiz_answers`.execute(large.db);
    }
    expect((await large.app.inject({ url: '/v1/quiz-answers?format=csv&year=2026', headers: bearer(readKey) })).statusCode).toBe(200);
  });
});
