import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from './support/contract-workspace';
import { seededOrganisation } from './support/learning-factories';
import { useTestApp } from './support/lifecycle';
import { type PrismProcess, startPrism } from './support/prism';
import { projectRoot } from './support/server-process';

/*
 * Every code block of the README, as a reader copies it:
 * - TypeScript blocks are type-checked under `strict` (in a scratch project inside the checkout,
 *   beside the types the README's own `npx openapi-typescript` line generated), then run against
 *   the real server;
 * - JavaScript blocks are type-checked (checkJs, strict but for the annotations JavaScript cannot
 *   write) and run;
 * - shell blocks, line by line: `curl` and `npx tsx examples/…` run against the real server (or
 *   Prism's mock for port 4010), with the README's key and address replaced by the test's; `npx
 *   openapi-typescript` runs; `make`, `npm run`, `npm start` name targets and scripts that exist
 *   (`make help` runs); `npx pkg@version` and `npm install pkg@version` pin exactly the versions
 *   this project tests with; any other program must be installed.
 * A block in another language (text, output) is not code and is left alone.
 */

const readme = readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
const packageJson = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const makefile = readFileSync(path.join(projectRoot, 'Makefile'), 'utf8');
const run = promisify(execFile);

interface Block {
  language: 'shell' | 'ts' | 'js';
  code: string;
  /** The README line the block starts on, for messages. */
  line: number;
}

const languages: Record<string, Block['language']> = {
  sh: 'shell',
  bash: 'shell',
  shell: 'shell',
  ts: 'ts',
  typescript: 'ts',
  js: 'js',
  javascript: 'js',
};

function readmeBlocks(): Block[] {
  return [...readme.matchAll(/^```([\w-]*)\n([\s\S]*?)^```$/gm)].flatMap((match) => {
    const language = languages[match[1]!];
    if (!language) return [];
    return [{ language, code: match[2]!, line: readme.slice(0, match.index).split('\n').length }];
  });
}

/** A shell line as words, the way sh splits them (quotes, backslash continuations, comments). */
function shellCommands(code: string): { words: string[]; stdoutTo?: string; text: string }[] {
  return code
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter(Boolean)
    .map((text) => {
      const words = [...text.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
      const redirect = words.indexOf('>');
      if (redirect < 0) return { words, text };
      return { words: words.slice(0, redirect), stdoutTo: words[redirect + 1], text };
    });
}

const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
let workspace: Workspace;
let prism: PrismProcess;
let origin: string;
let readKey: string;
let writeKey: string;

/** The README's placeholders (address, key) replaced by the test's. */
function localised(text: string): string {
  return text
    .replaceAll('http://127.0.0.1:3000', origin)
    .replaceAll('http://127.0.0.1:4010', prism.baseUrl)
    .replaceAll('sk_live_…', readKey);
}

function pinnedVersion(name: string): string | undefined {
  return packageJson.dependencies[name] ?? packageJson.devDependencies[name];
}

/** `name@1.2.3` (a scope's `@` apart): its name and version. */
function packageSpec(spec: string): { name: string; version: string | undefined } {
  const at = spec.lastIndexOf('@');
  return at > 0 ? { name: spec.slice(0, at), version: spec.slice(at + 1) } : { name: spec, version: undefined };
}

async function execute(file: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: options.cwd ?? workspace.dir,
      env: { ...process.env, ...options.env },
      timeout: 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number | string; stdout?: string; stderr?: string; message: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : 1,
      stdout: failed.stdout ?? '',
      stderr: `${failed.stderr ?? ''}${failed.message}`,
    };
  }
}

const bin = (name: string) => path.join(projectRoot, 'node_modules', '.bin', name);

/** Checks one shell command of the README, running it where that is cheap and safe; returns what went wrong, if anything. */
async function checkCommand(words: string[], stdoutTo: string | undefined): Promise<string | null> {
  const [program, ...args] = words.map(localised);
  const write = (output: string) => (stdoutTo ? workspace.write(stdoutTo, output) : undefined);
  switch (program) {
    case 'curl': {
      // The status is appended to stdout; a `Prefer: code=…` asks the mock for that status.
      const expected = Number(/Prefer: code=(\d{3})/i.exec(args.join(' '))?.[1] ?? 200);
      const result = await execute('curl', ['-sS', ...args, '-w', '\n%{http_code}']);
      const status = Number(result.stdout.trim().split('\n').at(-1));
      return result.code === 0 && status === expected
        ? null
        : `answered ${status} (expected ${expected}): ${result.stderr}${result.stdout.slice(0, 300)}`;
    }
    case 'npx': {
      const [tool, ...toolArgs] = args as [string, ...string[]];
      const { name, version } = packageSpec(tool);
      if (version !== undefined)
        return pinnedVersion(name) === version ? null : `${name}@${version} is not the version this project tests (${pinnedVersion(name)})`;
      if (name === 'tsx') {
        const result = await execute(process.execPath, ['--import', 'tsx', path.join(projectRoot, toolArgs[0]!), ...toolArgs.slice(1)]);
        write(result.stdout);
        return result.code === 0 ? null : result.stderr;
      }
      if (!existsSync(bin(name))) return `${name} is not installed by this project`;
      if (name === 'openapi-typescript') {
        const result = await execute(
          bin(name),
          toolArgs.map((arg) => (arg === 'openapi.yaml' ? path.join(projectRoot, arg) : arg)),
        );
        return result.code === 0 ? null : result.stderr;
      }
      return null;
    }
    case 'npm': {
      const [command, ...rest] = args.filter((arg) => arg !== '--silent');
      if (command === 'install' || command === 'i') {
        const specs = rest.filter((arg) => !arg.startsWith('-')).map(packageSpec);
        const unpinned = specs.filter(({ name, version }) => version === undefined || version !== pinnedVersion(name));
        return unpinned.length === 0
          ? null
          : `not pinned to the versions this project tests: ${unpinned.map((spec) => `${spec.name}@${spec.version ?? '(none)'} (tested: ${pinnedVersion(spec.name)})`).join(', ')}`;
      }
      if (command === 'run') return rest[0]! in packageJson.scripts ? null : `no npm script ${rest[0]}`;
      if (command === 'start' || command === 'test') return command in packageJson.scripts ? null : `no npm script ${command}`;
      if (command === 'ci') return null;
      return `npm ${command}: no rule to check it (add one to tests/docs.readme-snippets.test.ts)`;
    }
    case 'make': {
      const target = args[0] ?? 'help';
      if (!new RegExp(`^${target}:`, 'm').test(makefile)) return `no make target ${target}`;
      if (target !== 'help') return null;
      const result = await execute('make', ['--no-print-directory', 'help'], { cwd: projectRoot });
      return result.code === 0 && result.stdout.includes('make test') ? null : result.stderr;
    }
    default: {
      const found = await execute('sh', ['-c', `command -v ${JSON.stringify(program)}`]);
      return found.code === 0 ? null : `${program} is not a program installed here`;
    }
  }
}

beforeAll(async () => {
  // Real data, so that the README's requests (a programme, a year) meet what they ask for.
  const org = await seededOrganisation(fixture.db, { name: 'Formations Lecteurs', learners: 6, seed: 3 });
  readKey = org.readKey;
  writeKey = org.writeKey;
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(fixture.app.server.address() as { port: number }).port}`;
  prism = await startPrism({ mock: 'static' });
  workspace = createWorkspace('readme-snippets');
}, 180_000);

afterAll(async () => {
  await prism?.stop();
});

describe('the README’s code blocks', () => {
  const blocks = readmeBlocks();

  it('has TypeScript, JavaScript and shell blocks to check', () => {
    for (const language of ['shell', 'ts', 'js'] as const)
      expect(
        blocks.some((block) => block.language === language),
        language,
      ).toBe(true);
  });

  it('every shell command runs, or names a target, script, pinned package or program that exists', async () => {
    const problems: string[] = [];
    for (const block of blocks.filter((candidate) => candidate.language === 'shell')) {
      for (const { words, stdoutTo, text } of shellCommands(block.code)) {
        const problem = await checkCommand(words, stdoutTo);
        if (problem) problems.push(`README line ${block.line}: ${text}\n    ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  }, 180_000);

  it('every TypeScript and JavaScript block compiles under strict, and runs against the real server', async () => {
    // The types the README's own `npx openapi-typescript …` line makes (run here too, should the shell test run alone).
    expect(await checkCommand(['npx', 'openapi-typescript', `${origin}/v1/openapi.yaml`, '-o', 'partner-api.d.ts'], undefined)).toBeNull();
    const files = blocks
      .filter((block) => block.language !== 'shell')
      .map((block) => {
        const file = `readme-line-${block.line}.${block.language}`;
        workspace.write(file, `${localised(block.code)}\nexport {};\n`);
        return file;
      });
    expect(await workspace.typecheck('typescript')).toBe('');
    if (files.some((file) => file.endsWith('.js'))) expect(await workspace.typecheck('javascript')).toBe('');
    for (const file of files) {
      const result = await execute(process.execPath, ['--import', 'tsx', path.join(workspace.dir, file)], {
        env: { PARTNER_API_KEY: writeKey },
      });
      expect(result.stderr, file).toBe('');
      expect(result.code, file).toBe(0);
    }
  }, 180_000);
});
