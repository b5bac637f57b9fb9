import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/database';
import { type AdminCommand, frenchAlternatives, type OptionValues, parseCommandLine, UsageError } from './command';

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

/**
 * The command the line names: the longest whose words begin it (`key create` before `key`).
 * Options come after the command's words.
 */
function findCommand(commands: AdminCommand[], argv: string[]): AdminCommand | undefined {
  return [...commands].sort((a, b) => b.name.length - a.name.length).find((c) => c.name.split(' ').every((word, i) => argv[i] === word));
}

/** Why no command matched, with the commands of the group when its first word is known. */
function unknownCommand(commands: AdminCommand[], argv: string[]): string {
  const firstOption = argv.findIndex((arg) => arg.startsWith('-'));
  const words = (firstOption === -1 ? argv : argv.slice(0, firstOption)).slice(0, 2);
  if (words.length === 0) return `Indiquez une commande avant les options (reçu « ${argv.join(' ')} »).`;
  const group = commands.filter((c) => c.name.split(' ')[0] === words[0]).map((c) => c.name);
  if (group.length === 0) return `Commande inconnue : « ${words.join(' ')} ».`;
  const alternatives = frenchAlternatives(group);
  return words.length === 1
    ? `Commande incomplète : « ${words[0]} » seul ne dit pas quoi faire ; écrivez ${alternatives}.`
    : `Commande inconnue : « ${words.join(' ')} » ; les commandes « ${words[0]} » sont ${alternatives}.`;
}

async function main(argv: string[]): Promise<number> {
  const commands = await loadCommands();
  const command = findCommand(commands, argv);
  if (!command) {
    if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
      await writeAll(process.stdout, help(commands) + '\n');
      return argv.length === 0 ? 2 : 0;
    }
    await writeAll(process.stderr, `${unknownCommand(commands, argv)}\n\n${help(commands)}\n`);
    return 2;
  }
  const options = { ...command.options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
  let values: OptionValues;
  try {
    values = parseCommandLine(argv.slice(command.name.split(' ').length), options);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await writeAll(process.stderr, `${error.message}\n\n${commandHelp(command)}\n`);
    return 2;
  }
  if (values.help) {
    await writeAll(process.stdout, commandHelp(command) + '\n');
    return 0;
  }
  const config = loadConfig();
  const database = await openDatabase(config, { poolSize: 8 });
  try {
    const result = await command.run({ db: database.db, config, values, progress: (message) => process.stderr.write(message) });
    await writeAll(process.stdout, (values.json ? JSON.stringify(result.json) : result.text) + '\n');
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
