import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/database';
import { type AdminCommand, UsageError } from './command';

/**
 * The operator commands (the dashboard's side): `npm run --silent admin -- <command> [--json]`.
 * Every file of scripts/commands/ contributes its `commands`; they read the same settings as the
 * server and work whether or not it is running.
 */
async function loadCommands(): Promise<AdminCommand[]> {
  const folder = path.join(path.dirname(fileURLToPath(import.meta.url)), 'commands');
  const commands: AdminCommand[] = [];
  for (const file of (await readdir(folder)).filter((name) => name.endsWith('.ts')).sort()) {
    const module = (await import(pathToFileURL(path.join(folder, file)).href)) as { commands?: AdminCommand[] };
    commands.push(...(module.commands ?? []));
  }
  return commands;
}

function help(commands: AdminCommand[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage : npm run --silent admin -- <commande> [options] [--json] [--help]',
    '',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.description}`),
    '',
    'Réglages lus comme le serveur : DATABASE_URL, sinon la base PostgreSQL embarquée sous DATA_DIR (.data).',
  ].join('\n');
}

function commandHelp(command: AdminCommand): string {
  return [`Usage : npm run --silent admin -- ${command.name} ${command.usage} [--json]`, '', command.description].join('\n');
}

/**
 * Writes on stdout or stderr and resolves once the text is handed to the system: the process may
 * exit only then, or a pipe (`… --json | jq`) would get the first 64 KiB and no more.
 */
function writeAll(stream: NodeJS.WriteStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
}

function humanReadable(result: Record<string, unknown> | Record<string, unknown>[]): string {
  const rows = Array.isArray(result) ? result : [result];
  if (rows.length === 0) return '(aucun élément)';
  return rows
    .map((row) =>
      Object.entries(row)
        .map(([key, value]) => `${key}: ${typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)}`)
        .join('\n'),
    )
    .join('\n\n');
}

/** node:util's parseArgs refusals, said in French (operators read them); its messages quote the argument. */
function argumentError(error: Error & { code?: string }): string {
  const quoted = /'([^']+)'/.exec(error.message)?.[1]?.replace(/ <value>$/, '') ?? '';
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `Option inconnue : ${quoted}.`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `Argument inattendu : « ${quoted} » (chaque valeur suit son option, par exemple --name "Formations Dupont").`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (/does not take an argument/.test(error.message)) return `L’option ${quoted} ne prend pas de valeur.`;
      if (/ambiguous/.test(error.message)) return `Valeur de ${quoted} commençant par un tiret : écrivez ${quoted}=VALEUR.`;
      return `L’option ${quoted} attend une valeur.`;
    default:
      return `Arguments invalides : ${error.message}`;
  }
}

async function main(argv: string[]): Promise<number> {
  const commands = await loadCommands();
  const words = argv.filter((arg) => !arg.startsWith('-'));
  const command = [...commands]
    .sort((a, b) => b.name.length - a.name.length)
    .find((c) => c.name.split(' ').every((word, i) => words[i] === word));
  if (!command) {
    const asked = words.slice(0, 2).join(' ');
    if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
      await writeAll(process.stdout, help(commands) + '\n');
      return argv.length === 0 ? 2 : 0;
    }
    await writeAll(process.stderr, `Commande inconnue : « ${asked} ».\n\n${help(commands)}\n`);
    return 2;
  }
  const rest = argv.slice(argv.indexOf(command.name.split(' ').at(-1)!) + 1);
  const options = { ...command.options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: false; strict: true; options: typeof options }>>;
  try {
    parsed = parseArgs({ args: rest, allowPositionals: false, strict: true, options });
  } catch (error) {
    await writeAll(process.stderr, `${argumentError(error as Error & { code?: string })}\n\n${commandHelp(command)}\n`);
    return 2;
  }
  if (parsed.values.help) {
    await writeAll(process.stdout, commandHelp(command) + '\n');
    return 0;
  }
  const config = loadConfig();
  const database = await openDatabase(config, { poolSize: 8 });
  try {
    const result = await command.run({
      db: database.db,
      config,
      values: parsed.values as never,
      progress: (message) => process.stderr.write(message),
    });
    await writeAll(process.stdout, (parsed.values.json ? JSON.stringify(result) : humanReadable(result)) + '\n');
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      await writeAll(process.stderr, `${error.message}\n`);
      return 2;
    }
    throw error;
  } finally {
    await database.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) =>
    writeAll(process.stderr, `Erreur : ${error instanceof Error ? error.message : String(error)}\n`).finally(() => process.exit(1)),
);
