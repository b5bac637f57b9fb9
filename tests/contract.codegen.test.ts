import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createHandlers } from '../handlers';
import { answeredPaths, loadOpenapiDocument } from '../src/openapi-document';
import { testConfig } from './support/app';
import { projectRoot } from './support/server-process';

const run = promisify(execFile);

describe('generated code and handlers follow openapi.yaml', () => {
  it.each([
    ['openapi.ts', 'openapi.yaml'],
    ['management.ts', 'management.yaml'],
  ])(
    'codegen/%s is what openapi-typescript makes of %s today',
    async (generated, document) => {
      await expect(
        run('npx', ['openapi-typescript', document, '-o', `codegen/${generated}`, '--check'], { cwd: projectRoot }),
      ).resolves.toBeDefined();
    },
    60_000,
  );

  it('has exactly one handler per operationId of the paths the server answers (x-unlisted-paths included)', async () => {
    const document = loadOpenapiDocument();
    const operationIds = Object.values<Record<string, { operationId?: string }>>(answeredPaths(document)).flatMap((item) =>
      Object.values(item)
        .map((operation) => operation.operationId)
        .filter(Boolean),
    );
    const handlers = await createHandlers({ db: null as never, config: testConfig(), renderPool: null as never }, document);
    expect(Object.keys(handlers).sort()).toEqual([...operationIds].sort());
  });
});
