import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOpenapiDocument } from '../src/openapi-document';
import { ensureChromium, headlessChromium } from './support/chromium';
import { useTestDatabase } from './support/lifecycle';
import { projectRoot, type ServerProcess, startServerProcess } from './support/server-process';

const chromium = ensureChromium();
if ('missing' in chromium) process.stdout.write(`docs.browser: test ignoré — ${chromium.missing}\n`);

const database = useTestDatabase();
let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess(database.url);
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe.skipIf('missing' in chromium)('the docs page in a real browser', () => {
  const browser = 'path' in chromium ? chromium.path : '';

  it('renders every operation of the document', async () => {
    const dom = await headlessChromium(browser, `${server.baseUrl}/docs/`, ['--dump-dom']);
    const document = loadOpenapiDocument();
    expect(dom.includes(document.info.title)).toBe(true);
    // Swagger UI gives each operation block the id `operations-<tag>-<operationId>`.
    const rendered = new Set([...dom.matchAll(/id="operations-[^"]+-(\w+)"/g)].map((match) => match[1]));
    const operationIds = Object.values<Record<string, { operationId?: string }>>(document.paths).flatMap((item) =>
      Object.values(item)
        .map((operation) => operation.operationId)
        .filter(Boolean),
    );
    expect(operationIds.filter((id) => !rendered.has(id!))).toEqual([]);
    expect(operationIds.length).toBe(16);
  }, 180_000);

  it('takes a screenshot of it', async () => {
    const file = path.join(projectRoot, '.data', 'docs-screenshot.png');
    mkdirSync(path.dirname(file), { recursive: true });
    await headlessChromium(browser, `${server.baseUrl}/docs/`, [`--screenshot=${file}`, '--window-size=1280,2400']);
    expect(existsSync(file)).toBe(true);
    // A blank page of that size compresses to a few kilobytes; a rendered one is far larger.
    expect(statSync(file).size).toBeGreaterThan(50_000);
  }, 180_000);
});
