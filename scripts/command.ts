import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { DB } from '../db/connection';
import { findOrganisation } from '../db/organisations';
import type { Actor } from '../src/audit';
import type { Config } from '../src/config';

/** The operator, as the audit log records changes made from the shell. */
export const operatorActor: Actor = { kind: 'operator', email: null, sessionId: null };

/** A mistake in the command line or a refusal of the operator's request: printed as is, exit code 2. */
export class UsageError extends Error {}

export type OptionValues = Record<string, string | boolean | undefined>;
export type CommandOptions = NonNullable<ParseArgsConfig['options']>;

export interface CommandContext {
  db: DB;
  config: Config;
  /** Option values, as parsed by `parseCommandLine` from `options`. */
  values: OptionValues;
  /** Progress for a person, on stderr (stdout is reserved for the result). */
  progress(message: string): void;
}

/** What a command prints: the same result for a program (`--json`) and for a person. */
export interface CommandResult {
  /** Machine output: stable English keys, ISO dates, wire values. */
  json: Record<string, unknown> | Record<string, unknown>[];
  /** Human output: French sentences and tables, dates in Paris time (scripts/output.ts). */
  text: string;
}

/** One operator command: `npm run --silent admin -- <name> [options]`. */
export interface AdminCommand {
  /** Words of the command, e.g. `key create`. */
  name: string;
  /** Options after the name, as shown by --help. */
  usage: string;
  description: string;
  options: CommandOptions;
  run(context: CommandContext): Promise<CommandResult>;
}

/**
 * The options of a command line, or a UsageError that says in French what is wrong: every refusal
 * of node:util's strict parseArgs (ERR_PARSE_ARGS_UNKNOWN_OPTION, ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL,
 * ERR_PARSE_ARGS_INVALID_OPTION_VALUE: a missing value, a value that looks like an option, a value
 * given to a flag), found from its tokens rather than from its English messages, which change
 * between Node versions. Accepts exactly what the strict parser accepts, with the same values.
 */
export function parseCommandLine(args: string[], options: CommandOptions): OptionValues {
  const { values, tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind === 'positional') {
      throw new UsageError(
        `Argument inattendu : « ${token.value} » (chaque valeur suit son option, par exemple --name "Formations Dupont").`,
      );
    }
    if (token.kind !== 'option') continue;
    // Own keys only: `--constructor` is no option of ours.
    const option = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!option) throw new UsageError(`Option inconnue : ${token.rawName}.`);
    if (option.type === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`L’option ${token.rawName} ne prend pas de valeur (reçu « ${token.value} »).`);
    } else if (token.value === undefined) {
      throw new UsageError(`L’option ${token.rawName} attend une valeur.`);
    } else if (!token.inlineValue && token.value.length > 1 && token.value.startsWith('-')) {
      // What the strict parser calls ambiguous: a forgotten value before the next option, or a
      // value that starts with a dash.
      throw new UsageError(
        `L’option ${token.rawName} attend une valeur, et « ${token.value} » qui la suit commence par un tiret : ` +
          `si c’est bien sa valeur, écrivez ${token.rawName}=${token.value}.`,
      );
    }
  }
  return values as OptionValues;
}

function missing(name: string): UsageError {
  return new UsageError(`L’option --${name} est obligatoire.`);
}

export function requiredString(values: OptionValues, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw missing(name);
  return value.trim();
}

export function optionalString(values: OptionValues, name: string): string | null {
  const value = values[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function requiredUuid(values: OptionValues, name: string): string {
  const value = requiredString(values, name);
  if (!uuidPattern.test(value)) throw new UsageError(`--${name} doit être un identifiant UUID (reçu « ${value} »).`);
  return value.toLowerCase();
}

export function positiveInteger(values: OptionValues, name: string, fallback?: number): number {
  const raw = values[name];
  if (raw === undefined) {
    if (fallback !== undefined) return fallback;
    throw missing(name);
  }
  const value = Number(raw);
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(`--${name} doit être un entier positif (reçu « ${String(raw)} »).`);
  }
  return value;
}

/** `a, b ou c`: a French list of alternatives. */
export function frenchAlternatives(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} ou ${items.at(-1)}`;
}

/** One of a closed set of values; undefined when the option is absent and not required. */
export function oneOf<T extends string>(values: OptionValues, name: string, allowed: readonly T[], required: true): T;
export function oneOf<T extends string>(values: OptionValues, name: string, allowed: readonly T[], required: false): T | undefined;
export function oneOf<T extends string>(values: OptionValues, name: string, allowed: readonly T[], required: boolean): T | undefined {
  const raw = values[name];
  if (raw === undefined) {
    if (required) throw missing(name);
    return undefined;
  }
  if (!(allowed as readonly unknown[]).includes(raw)) {
    throw new UsageError(`--${name} doit valoir ${frenchAlternatives(allowed)} (reçu « ${String(raw)} »).`);
  }
  return raw as T;
}

/** A calendar date `AAAA-MM-JJ` that exists (no 30 February). */
export function optionalDate(values: OptionValues, name: string): string | null {
  const raw = values[name];
  if (raw === undefined) return null;
  // Date rolls 30 February over to March, and gives NaN for month 13: both are refused.
  const parsed = typeof raw === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(raw) ? Date.parse(`${raw}T00:00:00Z`) : Number.NaN;
  if (typeof raw !== 'string' || Number.isNaN(parsed) || !new Date(parsed).toISOString().startsWith(raw)) {
    throw new UsageError(`--${name} doit être une date AAAA-MM-JJ (reçu « ${String(raw)} »).`);
  }
  return raw;
}

/** The organisation an `--org` names, or the operator is told it does not exist. */
export async function requireOrganisation(db: DB, orgId: string) {
  const organisation = await findOrganisation(db, orgId);
  if (!organisation) throw new UsageError(`Aucune organisation ${orgId}.`);
  return organisation;
}
