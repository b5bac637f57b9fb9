import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError } from '../scripts/command';
import { loadConfig } from '../src/config';
import { adminFailure } from './support/admin';
import { useTestDatabase } from './support/lifecycle';
import { startServerProcess } from './support/server-process';

const database = useTestDatabase();

const options = {
  name: { type: 'string' },
  count: { type: 'string' },
  write: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What node:util's strict parser says of a command line: its values, or its error code. */
function strictParse(args: string[]): { values: object } | { code: string } {
  try {
    return { values: { ...parseArgs({ args, options, strict: true, allowPositionals: false }).values } };
  } catch (error) {
    return { code: (error as { code: string }).code };
  }
}

/** The same through the commands' parser: its values, or its French refusal. */
function ourParse(args: string[]): { values: object } | { refusal: string } {
  try {
    return { values: { ...parseCommandLine(args, options) } };
  } catch (error) {
    if (error instanceof UsageError) return { refusal: error.message };
    throw error;
  }
}

// English that node:util's messages carry and a French sentence never does.
const english = /unknown option|unexpected argument|is ambiguous|argument missing|does not take|positional|must be/i;

describe('the command line parser', () => {
  it('refuses exactly what the strict parser refuses, in French, and otherwise gives the same values', () => {
    const word = fc.constantFrom(
      '--name',
      '--count',
      '--write',
      '--json',
      '-h',
      '--nom',
      '-x',
      '-hx',
      '--name=Dupont',
      '--json=oui',
      '--count=-3',
      '-3',
      '--',
      '-',
      'Dupont',
      'Formations Éole',
    );
    const codes = new Set<string>();
    fc.assert(
      fc.property(fc.array(word, { maxLength: 5 }), (args) => {
        const strict = strictParse(args);
        const ours = ourParse(args);
        if ('code' in strict) {
          codes.add(strict.code);
          expect(ours, args.join(' ')).toHaveProperty('refusal');
          expect((ours as { refusal: string }).refusal).not.toMatch(english);
        } else {
          expect(ours, args.join(' ')).toEqual(strict);
        }
      }),
      { numRuns: 3000 },
    );
    // Every refusal of the strict parser was met.
    expect([...codes].sort()).toEqual([
      'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
      'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL',
      'ERR_PARSE_ARGS_UNKNOWN_OPTION',
    ]);
  });

  it('says what is wrong with each kind of refusal', () => {
    const cases: [string[], string, string][] = [
      [['--nom', 'X'], 'ERR_PARSE_ARGS_UNKNOWN_OPTION', 'Option inconnue : --nom.'],
      [['-x'], 'ERR_PARSE_ARGS_UNKNOWN_OPTION', 'Option inconnue : -x.'],
      [
        ['Dupont'],
        'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL',
        'Argument inattendu : « Dupont » (chaque valeur suit son option, par exemple --name "Formations Dupont").',
      ],
      [['--name'], 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', 'L’option --name attend une valeur.'],
      [
        ['--name', '--json'],
        'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
        'L’option --name attend une valeur, et « --json » qui la suit commence par un tiret : si c’est bien sa valeur, écrivez --name=--json.',
      ],
      [
        ['--count', '-3'],
        'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
        'L’option --count attend une valeur, et « -3 » qui la suit commence par un tiret : si c’est bien sa valeur, écrivez --count=-3.',
      ],
      [['--json=oui'], 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', 'L’option --json ne prend pas de valeur (reçu « oui »).'],
      [['--constructor'], 'ERR_PARSE_ARGS_UNKNOWN_OPTION', 'Option inconnue : --constructor.'],
    ];
    for (const [args, code, message] of cases) {
      expect(strictParse(args), args.join(' ')).toEqual({ code });
      expect(ourParse(args), args.join(' ')).toEqual({ refusal: message });
    }
  });

  it('prints those refusals, then the command’s usage, with exit code 2', async () => {
    const cases: [string[], string][] = [
      [['org', 'create', '--nom', 'X'], 'Option inconnue : --nom.'],
      [['org', 'create', 'Dupont'], 'Argument inattendu : « Dupont »'],
      [['org', 'create', '--name'], 'L’option --name attend une valeur.'],
      [['licences', 'add', '--count', '-3'], 'L’option --count attend une valeur, et « -3 » qui la suit commence par un tiret'],
      [['org', 'list', '--json=oui'], 'L’option --json ne prend pas de valeur'],
      [['key', 'lister'], 'Commande inconnue : « key lister » ; les commandes « key » sont key create, key list ou key revoke.'],
      [['key'], 'Commande incomplète : « key » seul ne dit pas quoi faire ; écrivez key create, key list ou key revoke.'],
      [['nimporte', 'quoi'], 'Commande inconnue : « nimporte quoi ».'],
    ];
    for (let start = 0; start < cases.length; start += 4) {
      const batch = cases.slice(start, start + 4);
      const failures = await Promise.all(batch.map(([args]) => adminFailure(database.url, args)));
      batch.forEach(([args, message], i) => {
        expect(failures[i]!.code, args.join(' ')).toBe(2);
        expect(failures[i]!.stderr.startsWith(message), `${args.join(' ')}: ${failures[i]!.stderr}`).toBe(true);
        expect(failures[i]!.stderr).toContain('Usage : npm run --silent admin -- ');
        expect(failures[i]!.stderr).not.toMatch(english);
      });
    }
  }, 120_000);
});

describe('settings refused at start', () => {
  const refusal = (environment: Record<string, string>) => {
    try {
      loadConfig(environment);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('the settings should have been refused');
  };

  it('name the variable, what it accepts (every allowed value of an enum) and what it got, in French', () => {
    expect(refusal({ PORT: 'abc' })).toBe('Configuration invalide : PORT doit être un nombre entier de 0 à 65535 (reçu « abc »).');
    expect(refusal({ PORT: '70000' })).toBe('Configuration invalide : PORT doit être un nombre entier de 0 à 65535 (reçu « 70000 »).');
    expect(refusal({ LOG_LEVEL: 'verbose' })).toBe(
      'Configuration invalide : LOG_LEVEL doit valoir fatal, error, warn, info, debug, trace ou silent (reçu « verbose »).',
    );
    expect(refusal({ RATE_LIMIT_PER_MINUTE: '0' })).toBe(
      'Configuration invalide : RATE_LIMIT_PER_MINUTE doit être un nombre entier d’au moins 1 (reçu « 0 »).',
    );
    expect(refusal({ WEBHOOK_RETRY_DELAYS: '60,,600' })).toBe(
      'Configuration invalide : WEBHOOK_RETRY_DELAYS doit donner des durées en secondes séparées par des virgules (60,600,3600) (reçu « 60,,600 »).',
    );
    expect(refusal({ HOST: '' })).toBe('Configuration invalide : HOST ne doit pas être vide.');
    // A database address may carry a password: it is not repeated.
    expect(refusal({ DATABASE_URL: 'mysql://admin:s3cret@db/app' })).toBe(
      'Configuration invalide : DATABASE_URL doit être une adresse postgres:// ou postgresql://.',
    );
    // Nor is the platform's management token, even a short one.
    expect(refusal({ MANAGEMENT_TOKEN: 'court-secret' })).toBe(
      'Configuration invalide : MANAGEMENT_TOKEN doit compter de 32 à 512 caractères visibles, sans espace (openssl rand -base64 48).',
    );
    expect(refusal({ PUBLIC_BASE_URL: 'https://api.exemple.fr/v1' })).toBe(
      'Configuration invalide : PUBLIC_BASE_URL doit être une adresse http:// ou https:// sans chemin (https://api.exemple.fr) (reçu « https://api.exemple.fr/v1 »).',
    );
    // Several at once: one line each.
    expect(refusal({ PORT: 'abc', DEMO: 'oui', TRUST_PROXY: 'partout' })).toBe(
      [
        'Configuration invalide :',
        '  - PORT doit être un nombre entier de 0 à 65535 (reçu « abc »).',
        '  - DEMO doit valoir 0 ou 1 (reçu « oui »).',
        '  - TRUST_PROXY doit donner des adresses ou réseaux séparés par des virgules (10.0.0.0/8,192.168.1.10), ou un nombre de relais (1) (reçu « partout »).',
      ].join('\n'),
    );
  });

  it('stop the server and the operator commands with that sentence', async () => {
    await expect(startServerProcess(database.url, { LOG_LEVEL: 'verbose' })).rejects.toThrow(
      /exited \(1\)[\s\S]*Configuration invalide : LOG_LEVEL doit valoir fatal, error, warn, info, debug, trace ou silent \(reçu « verbose »\)\./,
    );
    const failure = await adminFailure(database.url, ['org', 'list'], { PORT: 'abc' });
    expect(failure.code).toBe(1);
    expect(failure.stderr).toBe('Erreur : Configuration invalide : PORT doit être un nombre entier de 0 à 65535 (reçu « abc »).\n');
  }, 60_000);
});
