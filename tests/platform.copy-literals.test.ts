import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { copyOutWhole } from '../db/copy';
import { rowsOfCopy } from '../src/formats/row-batch';
import { useTestDatabase } from './support/lifecycle';

// COPY takes no parameters: db/copy.ts writes a statement's values into its text. Each value must
// reach PostgreSQL as the value it was, whatever characters it holds.

const database = useTestDatabase();

/** The one text field of the one row a COPY of `query` gives. */
async function copiedText(query: ReturnType<typeof sql<{ v: string | null }>>): Promise<string | null> {
  const batch = rowsOfCopy(await copyOutWhole(database.db, sql`select (${query})::text as v`), 1);
  expect(batch.rows).toBe(1);
  return batch.starts[0]! < 0 ? null : batch.bytes.toString('utf8', batch.starts[0]!, batch.ends[0]!);
}

describe('the values of a COPY statement', () => {
  it('writes texts, numbers, dates, booleans and null as the values they were', async () => {
    const texts = ["l'apostrophe", 'le \\ et le "', '-- pas un commentaire', 'é 𝄞', ''];
    for (const text of texts) expect(await copiedText(sql`${text}::text`)).toBe(text);
    expect(await copiedText(sql`${-1}::int - ${-2}::int`)).toBe('1');
    expect(await copiedText(sql`${1.5}::numeric`)).toBe('1.5');
    expect(await copiedText(sql`${new Date('2026-03-29T01:30:00Z')}::timestamptz = '2026-03-29T01:30:00Z'`)).toBe('true');
    expect(await copiedText(sql`${true}::boolean`)).toBe('true');
    expect(await copiedText(sql`${null}::text`)).toBeNull();
  });

  it('writes an array as one value, typed where it is used, its elements whole', async () => {
    const elements = ['a,b', '{c}', 'd "e"', 'f\\g', ' h ', 'NULL', ''];
    expect(JSON.parse((await copiedText(sql`array_to_json(${elements}::text[])`))!)).toEqual(elements);
    const keys = ['3f0c2a4e-8b1d-4c5e-9a6f-0123456789ab', '00000000-0000-4000-8000-000000000000'];
    expect(await copiedText(sql`${keys[1]}::uuid = any(${keys})`)).toBe('true');
    expect(await copiedText(sql`cardinality(${[7, -8, 9]}::bigint[])`)).toBe('3');
    expect(await copiedText(sql`42::bigint = any(${[]})`)).toBe('false');
  });
});
