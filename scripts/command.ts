import type { ParseArgsConfig } from 'node:util';
import type { DB } from '../db/connection';
import type { Config } from '../src/config';

/** A mistake in the command line: printed as is, exit code 2. */
export class UsageError extends Error {}

export interface CommandContext {
  db: DB;
  config: Config;
  /** Option values, as parsed by node:util parseArgs from `options`. */
  values: Record<string, string | boolean | undefined>;
  /** Progress for a person, on stderr (stdout is reserved for the result). */
  progress(message: string): void;
}

/** One operator command: `npm run --silent admin -- <name> [options]`. */
export interface AdminCommand {
  /** Words of the command, e.g. `key create`. */
  name: string;
  /** Options after the name, as shown by --help. */
  usage: string;
  description: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** The result: one JSON object with --json, `key: value` lines otherwise. */
  run(context: CommandContext): Promise<Record<string, unknown> | Record<string, unknown>[]>;
}

export function requiredString(values: CommandContext['values'], name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`L’option --${name} est obligatoire.`);
  return value.trim();
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function requiredUuid(values: CommandContext['values'], name: string): string {
  const value = requiredString(values, name);
  if (!uuidPattern.test(value)) throw new UsageError(`--${name} doit être un identifiant UUID (reçu « ${value} »).`);
  return value.toLowerCase();
}

export function positiveInteger(values: CommandContext['values'], name: string, fallback?: number): number {
  const raw = values[name];
  if (raw === undefined && fallback !== undefined) return fallback;
  const value = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(`--${name} doit être un entier positif (reçu « ${raw ?? ''} »).`);
  }
  return value;
}
