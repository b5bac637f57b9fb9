import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from './ports';
import { projectRoot } from './server-process';

export interface PrismProcess {
  baseUrl: string;
  stop(): Promise<void>;
}

/**
 * Prism from the project's dev dependency: `mock` (static examples, or `dynamic` data generated
 * from the schemas) or `proxy` to a real server with `--errors`, which turns every request or
 * response that breaks openapi.yaml into an error carrying `sl-violations`.
 */
export async function startPrism(mode: { mock: 'static' | 'dynamic' } | { proxyTo: string }): Promise<PrismProcess> {
  const port = await freePort();
  const args =
    'mock' in mode
      ? ['mock', 'openapi.yaml', '-p', String(port), '-h', '127.0.0.1', ...(mode.mock === 'dynamic' ? ['-d'] : [])]
      : ['proxy', 'openapi.yaml', mode.proxyTo, '-p', String(port), '-h', '127.0.0.1', '--errors'];
  const child: ChildProcess = spawn(path.join(projectRoot, 'node_modules', '.bin', 'prism'), args, {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism n’a pas démarré :\n${output}`)), 90_000);
    const check = () => {
      if (/Prism is listening/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Prism s’est arrêté (${code}) :\n${output}`));
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
