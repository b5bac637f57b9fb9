import { existsSync, mkdirSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadManagementDocument, loadOpenapiDocument } from '../src/openapi-document';
import { ensureChromium, headlessChromium, openBrowserPage } from './support/chromium';
import { useTestDatabase } from './support/lifecycle';
import { projectRoot, type ServerProcess, startServerProcess } from './support/server-process';

const chromium = ensureChromium();
if ('missing' in chromium) process.stdout.write(`docs.browser: test ignoré — ${chromium.missing}\n`);

const database = useTestDatabase();
let server: ServerProcess;
let dataDir: string;
/** The demo organisation's keys, as `make run` prints them. */
let demoKeys: { read: string; write: string };

beforeAll(async () => {
  // The demo organisation, as `make run` has it: its keys are what a newcomer pastes into the page.
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'partner-api-docs-'));
  server = await startServerProcess(database.url, { DEMO: '1', DATA_DIR: dataDir });
  demoKeys = {
    read: /clé lecture +: (sk_live_\S+)/.exec(server.output())![1]!,
    write: /clé écriture : (sk_live_\S+)/.exec(server.output())![1]!,
  };
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const serverRoot = () => server.baseUrl.replace(/\/v1$/, '');

it('sends /, /v1 and /v1/ to the docs page', async () => {
  for (const url of ['/', '/v1', '/v1/']) {
    const answer = await fetch(serverRoot() + url, { redirect: 'manual' });
    expect(answer.status, url).toBe(302);
    expect(answer.headers.get('location'), url).toBe('/v1/docs/');
  }
});

/** The GET operations of the contract, with the id Swagger UI gives each one's block. */
function getOperations(): { operationId: string; blockId: string; parameters: Record<string, any>[] }[] {
  const document = loadOpenapiDocument();
  const resolve = (parameter: Record<string, any>) =>
    parameter.$ref ? document.components.parameters[parameter.$ref.split('/').at(-1)] : parameter;
  return Object.values<Record<string, any>>(document.paths)
    .map((pathItem) => pathItem.get)
    .filter(Boolean)
    .map((operation) => ({
      operationId: operation.operationId,
      blockId: `operations-${operation.tags[0]}-${operation.operationId}`,
      parameters: (operation.parameters ?? []).map(resolve),
    }));
}

/** Opens the docs page and authorizes it with a key, as a newcomer does with the key `make run` printed. */
async function authorizedDocsPage(page: Page, key: string): Promise<void> {
  await page.goto(`${server.baseUrl}/docs/`);
  await page.locator('button.authorize').first().click();
  await page.locator('.modal-ux input').first().fill(key);
  await page.locator('.modal-ux button.authorize').click();
  await page.locator('.modal-ux button.close-modal').click();
}

/** What each input of an operation's "Try it out" holds, by parameter name. */
async function inputValues(page: Page, blockId: string): Promise<Record<string, string>> {
  return page
    .locator(`#${blockId} tr[data-param-name]`)
    .evaluateAll((rows) =>
      Object.fromEntries(
        rows.map((row) => [
          row.getAttribute('data-param-name'),
          (row.querySelector('input, select, textarea') as { value?: string } | null)?.value ?? '',
        ]),
      ),
    );
}

async function users(key: string): Promise<number> {
  const answer = await fetch(`${server.baseUrl}/users?limit=1`, { headers: { authorization: `Bearer ${key}` } });
  return ((await answer.json()) as { pagination: { total: number } }).pagination.total;
}

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
    // 14 GETs and POST /users (GET /{resource} is answered but kept out of `paths`).
    expect(operationIds.length).toBe(15);
  }, 180_000);

  it('takes a screenshot of it', async () => {
    const file = path.join(projectRoot, '.data', 'docs-screenshot.png');
    mkdirSync(path.dirname(file), { recursive: true });
    await headlessChromium(browser, `${server.baseUrl}/docs/`, [`--screenshot=${file}`, '--window-size=1280,2400']);
    expect(existsSync(file)).toBe(true);
    // A blank page of that size compresses to a few kilobytes; a rendered one is far larger.
    expect(statSync(file).size).toBeGreaterThan(50_000);
  }, 180_000);

  it('answers 200 on the first Execute of every GET operation, with only the demo key entered', async () => {
    const { page, close } = await openBrowserPage(browser);
    try {
      await authorizedDocsPage(page, demoKeys.read);
      const operations = getOperations();
      expect(operations.length).toBe(14);
      for (const operation of operations) {
        const block = page.locator(`#${operation.blockId}`);
        await block.locator('.opblock-summary').click();
        await block.locator('button.try-out__btn').click();
        // Nothing entered but each parameter's default; the activity report, which needs a learner,
        // opens on one of the demo organisation's.
        const values = await inputValues(page, operation.blockId);
        for (const parameter of operation.parameters) {
          const expected = parameter.schema?.default === undefined ? '' : String(parameter.schema.default);
          if (operation.operationId === 'getActivityReport' && parameter.name === 'email') expect(values.email).toMatch(/^\S+@\S+$/);
          else expect(values[parameter.name], `${operation.operationId} ${parameter.name}`).toBe(expected);
        }
        await block.locator('button.execute').click();
        const status = await block.locator('.live-responses-table tbody .response-col_status').first().textContent();
        expect(status?.trim(), operation.operationId).toBe('200');
        await block.locator('.opblock-summary').click();
      }
    } finally {
      await close();
    }
  }, 300_000);

  it('keeps every parameter example readable, in its description', async () => {
    const { page, close } = await openBrowserPage(browser);
    try {
      await page.goto(`${server.baseUrl}/docs/`);
      const block = page.locator('#operations-Organisation-getSummary');
      await block.locator('.opblock-summary').click();
      const document = loadOpenapiDocument();
      for (const name of ['email', 'user_id', 'programme', 'updated_since', 'If-None-Match']) {
        const example = String(document.components.parameters[name].example);
        await expect(block.locator(`tr[data-param-name="${name}"]`).textContent()).resolves.toContain(`Exemple : ${example}`);
      }
    } finally {
      await close();
    }
  }, 120_000);

  it('opens POST /users on a template that enrols nobody until it is edited, its examples still listed', async () => {
    const { page, close } = await openBrowserPage(browser);
    try {
      await authorizedDocsPage(page, demoKeys.write);
      const before = await users(demoKeys.read);
      const block = page.locator('#operations-Inscriptions-createUsers');
      await block.locator('.opblock-summary').click();
      const examples = await block
        .locator('.opblock-section-request-body .examples-select select')
        .evaluate((select) => [...(select as unknown as { options: { value: string }[] }).options].map((option) => option.value));
      expect(examples).toEqual(['a-completer', 'unitaire', 'unitaire-sans-programme', 'lot', 'lot-atomique']);
      await block.locator('button.try-out__btn').click();
      const body = await block.locator('.body-param textarea').inputValue();
      // No address anyone could have: nothing for the server to enrol.
      expect(body).not.toMatch(/[\w.+-]+@[\w-]+(\.[\w-]+)+/);
      await block.locator('button.execute').click();
      const status = await block.locator('.live-responses-table tbody .response-col_status').first().textContent();
      expect(status?.trim()).toBe('400');
      await expect(block.locator('.live-responses-table tbody .response-col_description').first().textContent()).resolves.toContain(
        'n’est pas une adresse électronique valide',
      );
      expect(await users(demoKeys.read)).toBe(before);
    } finally {
      await close();
    }
  }, 120_000);

  it('opens on the docs page from the server root', async () => {
    const { page, close } = await openBrowserPage(browser);
    try {
      await page.goto(`${serverRoot()}/`);
      await page.locator('.opblock').first().waitFor();
      expect(new URL(page.url()).pathname).toBe('/v1/docs/');
    } finally {
      await close();
    }
  }, 120_000);

  it.each([
    ['/v1', '/v1/learners', loadOpenapiDocument],
    ['/manage/v1', '/manage/v1/session', loadManagementDocument],
  ])(
    'explains every error code of %s on its errors page, where an error body’s doc_url leads',
    async (prefix, refused, load) => {
      const { page, close } = await openBrowserPage(browser);
      try {
        // An error the server answers (no credential): its doc_url opens the page on its code's row.
        const refusal = (await (await fetch(serverRoot() + refused)).json()) as { code: string; doc_url: string };
        expect(refusal.doc_url).toBe(`${serverRoot()}${prefix}/docs/errors#${refusal.code}`);
        await page.goto(refusal.doc_url);
        expect(await page.locator(':target').getAttribute('id')).toBe(refusal.code);
        await expect(page.locator(':target').isVisible()).resolves.toBe(true);
        // Every code the document declares has its row, with its HTTP status and its description.
        const declared = load().components.schemas.ErrorCode.oneOf as { const: string; description: string }[];
        for (const { const: code, description } of declared) {
          const cells = await page.locator(`tr[id="${code}"] > *`).allTextContents();
          expect(cells[0], code).toBe(code);
          expect(cells[1], code).toMatch(/^[45]\d\d$/);
          expect(cells[2]!.replace(/\s+/g, ' ').trim(), code).toBe(description.replace(/`/g, '').replace(/\s+/g, ' ').trim());
        }
        const failures = (load().components.schemas.WebhookFailureCode?.oneOf ?? []) as { const: string; description: string }[];
        for (const { const: code, description } of failures) {
          const cells = await page.locator(`tr[id="webhook-${code}"] > *`).allTextContents();
          const words = (text: string) => text.replace(/`/g, '').replace(/\s+/g, ' ').trim();
          expect(cells.map(words), code).toEqual([code, words(description)]);
        }
        if (prefix === '/manage/v1') expect(failures.length).toBeGreaterThan(0);
        expect(await page.locator('tbody tr').count()).toBe(declared.length + failures.length);
        // The page's own style applies under its Content-Security-Policy (its hash is right).
        expect(await page.evaluate<string>("getComputedStyle(document.querySelector('table')).borderCollapse")).toBe('collapse');
        // axe-core, evaluated through the DevTools protocol (the page's CSP allows no script).
        await page.evaluate(await readFile(path.join(projectRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8'));
        const violations = await page.evaluate<{ id: string; impact: string }[]>(
          'axe.run().then((result) => result.violations.map((v) => ({ id: v.id, impact: v.impact })))',
        );
        expect(violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );
});
