import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Browser, type BrowserContext, type Page, chromium as playwright } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../src/webhooks/verify';
import { bearer } from './support/app';
import { ensureChromium } from './support/chromium';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { projectRoot, type ServerProcess, startServerProcess } from './support/server-process';
import { eventually, startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

// The page « API et intégrations » in a real browser (Debian's Chromium, driven by playwright-core)
// against a real server and its webhook worker: the administrator's journeys, a read-only link
// whose every button the server refuses, axe-core on every section, and screenshots at 1280 and
// 390 px wide (in .data/screenshots/, to look at).

const chromium = ensureChromium();
if ('missing' in chromium) process.stdout.write(`management.page.browser: test ignoré — ${chromium.missing}\n`);

const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const database = useTestDatabase();
let server: ServerProcess;
let browser: Browser;
let receiver: WebhookReceiver;
let receiverStatus = 200;
const screenshots = path.join(projectRoot, '.data', 'screenshots');

const root = () => server.baseUrl.replace(/\/v1$/, '');

beforeAll(async () => {
  if ('missing' in chromium) return;
  server = await startServerProcess(database.url, {
    MANAGEMENT_TOKEN: managementToken,
    WEBHOOK_ALLOW_INSECURE: '1',
    WEBHOOK_RETRY_DELAYS: '0.2',
    WEBHOOK_DISABLE_AFTER: '2',
    WEBHOOK_TIMEOUT_MS: '2000',
  });
  browser = await playwright.launch({
    executablePath: chromium.path,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update'],
  });
  receiver = await startWebhookReceiver(() => ({ status: receiverStatus }));
  await mkdir(screenshots, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await server?.stop();
});

/** A link for the organisation, as the platform's backend asks for it. */
async function linkFor(orgId: string, readOnly = false): Promise<string> {
  const answer = await fetch(`${root()}/manage/v1/organisations/${orgId}/portal-links`, {
    method: 'POST',
    headers: { ...bearer(managementToken), 'content-type': 'application/json' },
    body: JSON.stringify({ actor_email: readOnly ? 'lecteur@formations.fr' : 'admin@formations.fr', read_only: readOnly }),
  });
  expect(answer.status).toBe(201);
  return ((await answer.json()) as { url: string }).url;
}

/** The page opened by a new link in a fresh browser context, once it has loaded every section. */
async function openPage(orgId: string, options: { readOnly?: boolean; width?: number; bypassCSP?: boolean } = {}) {
  const context: BrowserContext = await browser.newContext({
    viewport: { width: options.width ?? 1280, height: 900 },
    bypassCSP: options.bypassCSP ?? false,
  });
  const page = await context.newPage();
  const scriptErrors: string[] = [];
  page.on('pageerror', (error) => scriptErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().includes('Failed to load resource')) scriptErrors.push(message.text());
  });
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(await linkFor(orgId, options.readOnly));
  await page.waitForSelector('body[data-ready="true"]');
  return { page, context, scriptErrors };
}

const notice = (page: Page) => page.locator('#notice');

async function summaryStatus(key: string): Promise<number> {
  return (await fetch(`${server.baseUrl}/summary`, { headers: bearer(key) })).status;
}

describe.skipIf('missing' in chromium)('the page « API et intégrations » in a real browser', () => {
  it('creates a key shown once, which works on /v1 until it is revoked from the page', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Navigateur' });
    const { page, context, scriptErrors } = await openPage(orgId);
    await expect.poll(() => page.locator('#session-summary').textContent()).toContain('Formations Navigateur — admin@formations.fr');

    await page.getByLabel('Nom de la clé').fill('Tableur de suivi');
    await page.getByRole('button', { name: 'Créer la clé' }).click();
    const shown = page.locator('#key-created code');
    await shown.waitFor();
    const key = (await shown.textContent())!;
    expect(key).toMatch(/^sk_live_/);
    await expect.poll(() => page.locator('#key-created').textContent()).toContain('elle ne sera plus jamais affichée');
    expect(await summaryStatus(key)).toBe(200);
    // Shown once: the list holds its prefix, never the key.
    const row = page.locator('#keys tr', { hasText: 'Tableur de suivi' });
    await expect.poll(() => row.textContent()).toContain(key.slice(0, 14));
    await page.getByRole('button', { name: 'J’ai copié, masquer' }).click();
    expect(await page.content()).not.toContain(key);

    await row.getByRole('button', { name: 'Révoquer' }).click();
    await expect.poll(() => notice(page).textContent()).toContain('Clé « Tableur de suivi » révoquée.');
    await expect.poll(() => row.textContent()).toContain('Révoquée');
    expect(await summaryStatus(key)).toBe(401);
    await expect.poll(() => page.locator('#audit-events').textContent()).toContain('Clé révoquée');
    expect(scriptErrors).toEqual([]);
    await context.close();
  });

  it('adds an endpoint to a receiver, sends a test that arrives signed, and shows it delivered in the journal', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Webhooks' });
    const { page, context, scriptErrors } = await openPage(orgId);
    await page.getByLabel('Adresse (https)').first().fill(receiver.url);
    await page
      .locator('#endpoint-types')
      .getByLabel(/Programme terminé/)
      .check();
    await page.getByRole('button', { name: 'Ajouter' }).click();
    const secret = (await page.locator('#endpoint-created code').textContent())!;
    expect(secret).toMatch(/^whsec_/);

    const before = receiver.received.length;
    const card = page.getByRole('article', { name: receiver.url });
    await card.getByRole('button', { name: 'Envoyer un test' }).click();
    await receiver.waitFor((received) => received.length > before);
    const ping = receiver.received.at(-1)!;
    expect(verifyWebhook(ping.rawBody, ping.headers['x-service-signature'], secret)).toMatchObject({ type: 'ping' });

    await eventually(
      async () => {
        await page.getByRole('button', { name: 'Filtrer' }).click();
        return page.locator('#deliveries').textContent();
      },
      (text) => Boolean(text?.includes('Livrée')),
    );
    await page.locator('#deliveries summary').first().click();
    await expect.poll(() => page.locator('#deliveries').textContent()).toContain('200');
    await expect.poll(() => page.locator('#deliveries pre').first().textContent()).toContain('"type": "ping"');
    expect(scriptErrors).toEqual([]);
    await context.close();
  });

  it('shows an endpoint disabled by its failures with why and since when, re-enables it, and replays a delivery', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Panne' });
    const { page, context, scriptErrors } = await openPage(orgId);
    await page.getByLabel('Adresse (https)').first().fill(`${receiver.url}?panne`);
    await page.getByRole('button', { name: 'Ajouter' }).click();
    await page.locator('#endpoint-created code').waitFor();
    receiverStatus = 500;
    try {
      const card = page.getByRole('article', { name: `${receiver.url}?panne` });
      await card.getByRole('button', { name: 'Envoyer un test' }).click();
      // Two failures in a row (WEBHOOK_DISABLE_AFTER=2) disable the endpoint.
      await eventually(
        async () => {
          await page.reload();
          await page.waitForSelector('body[data-ready="true"]');
          return page.getByRole('article', { name: `${receiver.url}?panne` }).textContent();
        },
        (text) => Boolean(text?.includes('Désactivé après trop d’échecs de suite depuis le')),
      );
    } finally {
      receiverStatus = 200;
    }
    const card = page.getByRole('article', { name: `${receiver.url}?panne` });
    await card.getByRole('button', { name: 'Réactiver' }).click();
    await expect.poll(() => notice(page).textContent()).toContain('Point de réception réactivé');
    await expect.poll(() => card.textContent()).toContain('Actif');

    await page.locator('#filter-status').selectOption('dead');
    await page.getByRole('button', { name: 'Filtrer' }).click();
    const dead = page.locator('#deliveries > .table-scroll > table > tbody > tr').first();
    await expect.poll(() => dead.textContent()).toContain('Abandonnée');
    // Each failed attempt says why in its code, which leads to its explanation.
    const failureCodes = dead.locator('a[href="/manage/v1/docs/errors#webhook-http_status"]');
    expect(await failureCodes.count()).toBeGreaterThan(0);
    expect(await failureCodes.first().textContent()).toBe('http_status');
    const before = receiver.received.length;
    await dead.getByRole('button', { name: 'Renvoyer' }).click();
    await expect.poll(() => notice(page).textContent()).toContain('Livraison renvoyée');
    await receiver.waitFor((received) => received.length > before);
    await page.locator('#filter-status').selectOption('delivered');
    await eventually(
      async () => {
        await page.getByRole('button', { name: 'Filtrer' }).click();
        return page.locator('#deliveries > .table-scroll > table > tbody > tr').count();
      },
      (rows) => rows === 1,
    );
    expect(scriptErrors).toEqual([]);
    await context.close();
  });

  it('with a read-only link, shows everything and every button gets the server’s refusal', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Lecture' });
    const setup = await fetch(`${root()}/manage/v1/organisations/${orgId}/webhook-endpoints`, {
      method: 'POST',
      headers: { ...bearer(managementToken), 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(setup.status).toBe(201);
    const { page, context, scriptErrors } = await openPage(orgId, { readOnly: true });
    await expect.poll(() => page.locator('#session-summary').textContent()).toContain('Lecture seule');
    const refusal = 'Accès en lecture seule : ce lien permet de consulter, pas de modifier.';
    const attempts: [string, () => Promise<void>][] = [
      [
        'Créer la clé',
        async () => {
          await page.getByLabel('Nom de la clé').fill('Essai');
          await page.getByRole('button', { name: 'Créer la clé' }).click();
        },
      ],
      ['Révoquer', () => page.locator('#keys tr').nth(1).getByRole('button', { name: 'Révoquer' }).click()],
      [
        'Ajouter',
        async () => {
          await page.getByLabel('Adresse (https)').first().fill('https://93.184.216.34/autre');
          await page.getByRole('button', { name: 'Ajouter' }).click();
        },
      ],
      ...['Envoyer un test', 'Envoyer un exemple', 'Changer le secret', 'Supprimer'].map(
        (name) => [name, () => page.getByRole('article').first().getByRole('button', { name }).click()] as [string, () => Promise<void>],
      ),
      [
        'Renvoyer les abandonnées',
        async () => {
          await page.getByLabel('depuis le').fill('2026-01-01T00:00');
          await page.getByRole('button', { name: 'Renvoyer' }).click();
        },
      ],
    ];
    for (const [name, attempt] of attempts) {
      await page.evaluate("document.getElementById('notice').textContent = ''");
      await attempt();
      await expect.poll(() => notice(page).textContent(), { message: name }).toBe(refusal);
    }
    const refused = await database.db
      .selectFrom('audit_events')
      .select('action')
      .where('org_id', '=', orgId)
      .where('outcome', '=', 'refused')
      .execute();
    expect(refused).toHaveLength(attempts.length);
    expect(scriptErrors).toEqual([]);
    await context.close();
  });

  it('has no serious or critical accessibility violation on any section, at 1280 and 390 px wide', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Accessibles' });
    await fetch(`${root()}/manage/v1/organisations/${orgId}/webhook-endpoints`, {
      method: 'POST',
      headers: { ...bearer(managementToken), 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    const axe = await readFile(path.join(projectRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
    for (const width of [1280, 390]) {
      // axe-core is injected as a script: only this context lifts the page's CSP to let it in.
      const { page, context } = await openPage(orgId, { width, bypassCSP: true });
      await page.getByLabel('Nom de la clé').fill('Clé de démonstration');
      await page.getByRole('button', { name: 'Créer la clé' }).click();
      await page.locator('#key-created code').waitFor();
      await page.addScriptTag({ content: axe });
      const violations = await page.evaluate<{ id: string; impact: string; nodes: number }[]>(
        'axe.run().then((result) => result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })))',
      );
      expect(
        violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical'),
        `${width} px`,
      ).toEqual([]);
      await page.screenshot({ path: path.join(screenshots, `integrations-${width}.png`), fullPage: true });
      // Nothing wider than the window at 390 px: the page reads without sideways scrolling.
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
      expect(overflow, `${width} px`).toBeLessThanOrEqual(0);
      await context.close();
    }
  });

  it('is framed by nobody without PORTAL_FRAME_ANCESTORS, runs no inline script, and says so without a session', async () => {
    const answer = await fetch(`${root()}/integrations/`);
    expect(answer.status).toBe(200);
    const policy = answer.headers.get('content-security-policy')!;
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(answer.headers.get('x-frame-options')).toBe('DENY');
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${root()}/integrations/`);
    await expect.poll(() => page.locator('#notice').textContent()).toContain('Session expirée ou fermée');
    await context.close();
  });
});
