import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createApiKey } from '../../db/api-keys';
import { advisoryLocks, type DB, withAdvisoryLock } from '../../db/connection';
import { addLicences, countOrganisations, createOrganisation } from '../../db/organisations';
import { displayPrefix, generateApiKey, hashApiKey } from '../api-keys';
import type { Config } from '../config';
import { seedOrganisation } from './seed/generate';

export interface DemoKeys {
  orgId: string;
  orgName: string;
  readKey: string;
  writeKey: string;
}

/** Learners of the demo organisation (README, "Two commands"). */
export const demoLearners = 300;

function demoKeysFile(config: Config): string {
  return path.resolve(config.dataDir, 'demo-keys.json');
}

/**
 * On the first start of an empty database: a demo organisation with licences and a read and a
 * write key. The keys are kept in DATA_DIR/demo-keys.json (a local development file) so that each
 * start can print them again; in the database they exist only as hashes, as every key. Processes
 * that start together on an empty database take turns: only the first seeds.
 */
export async function seedDemoOnFirstStart(db: DB, config: Config): Promise<DemoKeys | null> {
  if (!config.demo) return null;
  return withAdvisoryLock(db, advisoryLocks.demoSeed, () => seedOnEmptyDatabase(db, config));
}

async function seedOnEmptyDatabase(db: DB, config: Config): Promise<DemoKeys | null> {
  if ((await countOrganisations(db)) === 0) {
    const keys = await db.transaction().execute(async (trx) => {
      const organisation = await createOrganisation(trx, { name: 'Organisme de démonstration', allowedEmailDomains: [] });
      await addLicences(trx, organisation.id, 'standard', 200);
      await addLicences(trx, organisation.id, 'tutorat', 50);
      const readKey = generateApiKey();
      const writeKey = generateApiKey();
      for (const [key, scopes, label] of [
        [readKey, ['read'], 'démo lecture'],
        [writeKey, ['read', 'write'], 'démo écriture'],
      ] as const) {
        await createApiKey(trx, {
          orgId: organisation.id,
          keyHash: hashApiKey(key),
          keyPrefix: displayPrefix(key),
          label,
          scopes: [...scopes],
          expiresAt: null,
        });
      }
      return { orgId: organisation.id, orgName: organisation.name, readKey, writeKey };
    });
    // Its learners and three calendar years of their learning data, from the generator (historical
    // data: no webhook event). A few hundred, so that the first start stays quick.
    await seedOrganisation(db, { orgId: keys.orgId, learners: demoLearners, seed: 1 });
    await mkdir(path.dirname(demoKeysFile(config)), { recursive: true });
    await writeFile(demoKeysFile(config), JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
    return keys;
  }
  try {
    return JSON.parse(await readFile(demoKeysFile(config), 'utf8')) as DemoKeys;
  } catch {
    return null;
  }
}
