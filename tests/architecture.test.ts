import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrations } from '../db/migrate';
import { projectRoot } from './support/server-process';

// Imports point one way: codegen <- db <- src <- handlers / scripts <- tests. A folder may import
// from its own layer and the layers below; handlers and scripts are peers that do not import one
// another; src/http/app.ts alone assembles the handlers. examples/ are what an integrator copies: they
// may use the generated types and the verifier of src/, nothing of the server's inside. page/ runs
// in the browser: it uses codegen/ only.

const layers: Record<string, number> = { codegen: 0, db: 1, src: 2, handlers: 3, scripts: 3, examples: 3, page: 3, tests: 4 };

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const full = path.join(folder, name);
    if (statSync(full).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(full);
    return /\.(ts|mjs)$/.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Every relative import of a file (static, re-exports and dynamic), as paths from the project root. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => match[1]!);
  return specifiers.map((specifier) => path.relative(projectRoot, path.resolve(path.dirname(file), specifier)));
}

const topFolder = (relative: string) => relative.split(path.sep)[0]!;

/** Whether an import from one project file to another breaks the rule. */
function breaksTheRule(from: string, target: string): boolean {
  const [fromFolder, toFolder] = [topFolder(from), topFolder(target)];
  if (!(fromFolder in layers) || !(toFolder in layers)) return false;
  if (toFolder === 'handlers' && fromFolder !== 'handlers') return from !== path.join('src', 'http', 'app.ts') && fromFolder !== 'tests';
  if (fromFolder === 'examples' && toFolder === 'src') return !target.startsWith(path.join('src', 'webhooks', 'verify'));
  // The page runs in the browser: it may use the generated types of management.yaml, nothing of the server.
  if (fromFolder === 'page') return toFolder !== 'page' && toFolder !== 'codegen';
  const [fromLayer, toLayer] = [layers[fromFolder]!, layers[toFolder]!];
  return toLayer > fromLayer || (toLayer === fromLayer && fromFolder !== toFolder);
}

function violations(): string[] {
  return Object.keys(layers).flatMap((folder) =>
    sourceFiles(path.join(projectRoot, folder)).flatMap((file) => {
      const from = path.relative(projectRoot, file);
      return importsOf(file)
        .filter((target) => breaksTheRule(from, target))
        .map((target) => `${from} -> ${target}`);
    }),
  );
}

describe('the architecture', () => {
  it('has imports that point one way: codegen <- db <- src <- handlers / scripts <- tests', () => {
    expect(violations()).toEqual([]);
  });

  it.each([
    ['db/connection.ts', 'src/config', true],
    ['db/webhooks.ts', 'codegen/openapi', false],
    ['src/http/auth.ts', 'db/api-keys', false],
    ['src/local/demo.ts', 'scripts/commands/seed', true],
    ['src/server.ts', 'handlers/index', true],
    ['src/http/app.ts', 'handlers/index', false],
    ['handlers/index.ts', 'scripts/command', true],
    ['scripts/admin.ts', 'tests/support/app', true],
    ['tests/bench/support.ts', 'tests/support/ports', false],
    ['examples/sync.ts', 'src/config', true],
    ['examples/webhook-receiver.ts', 'src/webhooks/verify', false],
  ])('judges %s -> %s (breaks the rule: %s)', (from, target, breaks) => {
    expect(breaksTheRule(from, target)).toBe(breaks);
  });
});

describe('the migrations', () => {
  // db/migrate.ts lists them (the server bundle carries no folder to read): a file left out of the
  // list would never run.
  it('lists every file of db/migrations, under its own name, in the order the names sort', async () => {
    const files = readdirSync(path.join(projectRoot, 'db', 'migrations'))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => name.replace(/\.ts$/, ''))
      .sort();
    expect(Object.keys(migrations)).toEqual(files);
    for (const name of files) expect(migrations[name], name).toBe(await import(`../db/migrations/${name}.ts`));
  });
});
