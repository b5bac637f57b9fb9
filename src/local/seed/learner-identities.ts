import { sql } from 'kysely';
import type { DB } from '../../../db/connection';
import type { Random } from './random';
import * as words from './vocabulary';

/** Accents off, lower case, words joined by dashes: the local part of a generated email. */
function emailWord(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

export interface Identity {
  accountId: string;
  membershipId: string;
  name: string;
  email: string;
}

/** Names and emails of the learners, unique in the organisation and across the platform's accounts. */
export async function learnerIdentities(db: DB, count: number, random: Random, ids: Random, allowedDomains: string[]): Promise<Identity[]> {
  const taken = new Set<string>();
  const people = Array.from({ length: count }, () => {
    const first = random.pick(words.firstNames);
    const last = random.pick(words.lastNames);
    const domain =
      allowedDomains.length > 0
        ? random.pick(allowedDomains)
        : random.chance(0.25)
          ? random.pick(words.companyDomains)
          : random.weighted(words.mailDomains);
    return {
      accountId: ids.uuid(),
      membershipId: ids.uuid(),
      name: `${first} ${last}`,
      local: `${emailWord(first)}.${emailWord(last)}`,
      domain,
      email: '',
    };
  });
  const place = (person: (typeof people)[number]) => {
    for (let n = 1; ; n++) {
      const email = `${person.local}${n === 1 ? '' : n}@${person.domain}`;
      if (!taken.has(email)) {
        taken.add(email);
        person.email = email;
        return;
      }
    }
  };
  people.forEach(place);
  // Addresses that already have an account elsewhere on the platform get the next free number.
  for (;;) {
    const existing = new Set<string>();
    for (let start = 0; start < people.length; start += 5000) {
      const emails = people.slice(start, start + 5000).map((p) => p.email);
      const rows = await sql<{ email: string }>`select email from accounts where email = any(${emails}::text[])`.execute(db);
      for (const row of rows.rows) existing.add(row.email);
    }
    if (existing.size === 0) break;
    for (const email of existing) taken.add(email);
    people.filter((p) => existing.has(p.email)).forEach(place);
  }
  return people.map(({ accountId, membershipId, name, email }) => ({ accountId, membershipId, name, email }));
}
