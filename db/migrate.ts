import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Every file of db/migrations, by name; names sort in the order they must run. */
const folderMigrations: MigrationProvider = {
  async getMigrations() {
    const migrations: Record<string, Migration> = {};
    for (const file of (await readdir(migrationsDir)).sort()) {
      if (!/\.ts$/.test(file) || file.endsWith('.d.ts')) continue;
      migrations[file.replace(/\.ts$/, '')] = await import(path.join(migrationsDir, file));
    }
    return migrations;
  },
};

/** Brings the schema to the latest migration; concurrent callers are serialised by Kysely's lock. */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: folderMigrations });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
