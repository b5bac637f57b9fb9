import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from './server-process';

const run = promisify(execFile);

/** The compiler options an integrator's strict project would have (DOM included: generated clients name fetch's types). */
const strictCompilerOptions = {
  target: 'ES2022',
  module: 'ESNext',
  moduleResolution: 'Bundler',
  lib: ['ES2023', 'DOM', 'DOM.Iterable'],
  types: ['node'],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  esModuleInterop: true,
  isolatedModules: true,
};

/**
 * A scratch project inside the checkout (under `.data/`, ignored by git), so that the code written
 * there resolves the project's node_modules as an integrator's own project resolves its own: for
 * generated clients and README snippets, type-checked under `strict` and run with tsx.
 */
export interface Workspace {
  readonly dir: string;
  /** Writes a file (folders made as needed); returns its absolute path. */
  write(relativePath: string, text: string): string;
  /** Runs a command of the project's node_modules/.bin in the workspace; rejects with its output on failure. */
  exec(bin: string, args: string[], options?: { timeoutMs?: number }): Promise<string>;
  /** tsc under `strict` over every .ts file of the workspace (or every .js file, checkJs); returns its diagnostics (empty: it compiles). */
  typecheck(language?: 'typescript' | 'javascript'): Promise<string>;
  /** Runs a TypeScript file with tsx; returns its stdout. */
  runTs(relativePath: string, args?: string[]): Promise<string>;
}

export function createWorkspace(name: string): Workspace {
  const dir = path.join(projectRoot, '.data', 'workspaces', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const write = (relativePath: string, text: string) => {
    const file = path.join(dir, relativePath);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    return file;
  };
  write('package.json', JSON.stringify({ name: `workspace-${name}`, private: true, type: 'module' }, null, 2));
  write('tsconfig.json', JSON.stringify({ compilerOptions: strictCompilerOptions, include: ['**/*.ts'] }, null, 2));
  // Plain JavaScript as a checkJs project checks it: strict, except the annotations JavaScript cannot write.
  write(
    'tsconfig.javascript.json',
    JSON.stringify(
      { compilerOptions: { ...strictCompilerOptions, allowJs: true, checkJs: true, noImplicitAny: false }, include: ['**/*.js'] },
      null,
      2,
    ),
  );
  const exec = async (bin: string, args: string[], { timeoutMs = 120_000 } = {}) => {
    try {
      const { stdout, stderr } = await run(path.join(projectRoot, 'node_modules', '.bin', bin), args, {
        cwd: dir,
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
      });
      return stdout + stderr;
    } catch (error) {
      const failed = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`${bin} ${args.join(' ')} failed: ${failed.message}\n${failed.stdout ?? ''}${failed.stderr ?? ''}`);
    }
  };
  return {
    dir,
    write,
    exec,
    async typecheck(language = 'typescript') {
      const project = path.join(dir, language === 'typescript' ? 'tsconfig.json' : 'tsconfig.javascript.json');
      try {
        await run(path.join(projectRoot, 'node_modules', '.bin', 'tsc'), ['-p', project], {
          cwd: dir,
          timeout: 180_000,
          maxBuffer: 64 * 1024 * 1024,
        });
        return '';
      } catch (error) {
        const failed = error as { stdout?: string; stderr?: string; message: string };
        return `${failed.stdout ?? ''}${failed.stderr ?? ''}` || failed.message;
      }
    },
    async runTs(relativePath, args = []) {
      try {
        const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(dir, relativePath), ...args], {
          cwd: projectRoot,
          timeout: 60_000,
        });
        return stdout;
      } catch (error) {
        const failed = error as { stdout?: string; stderr?: string; message: string };
        throw new Error(`${relativePath} failed: ${failed.message}\n${failed.stdout ?? ''}${failed.stderr ?? ''}`);
      }
    },
  };
}
