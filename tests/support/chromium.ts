import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Page } from 'playwright-core';

const run = promisify(execFile);
const chromiumPath = '/usr/bin/chromium';

/**
 * Debian's Chromium, installed on first use when missing and apt can install it. Returns null
 * with the reason when it cannot be had (no apt, not root, no registry).
 */
export function ensureChromium(): { path: string } | { missing: string } {
  if (existsSync(chromiumPath)) return { path: chromiumPath };
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore', timeout: 300_000 });
    execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
      stdio: 'ignore',
      timeout: 600_000,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (error) {
    return { missing: `Chromium absent et non installable par apt-get : ${(error as Error).message}` };
  }
  return existsSync(chromiumPath) ? { path: chromiumPath } : { missing: 'apt-get n’a pas installé /usr/bin/chromium' };
}

/** Runs headless Chromium on a page with the flags this closed network needs; `extra` adds the action. */
export async function headlessChromium(executable: string, url: string, extra: string[]): Promise<string> {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'chromium-profile-'));
  try {
    const { stdout } = await run(
      executable,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        `--user-data-dir=${profile}`,
        '--virtual-time-budget=15000',
        ...extra,
        url,
      ],
      { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
    );
    return stdout;
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}

/**
 * A page in headless Chromium driven over the DevTools protocol (playwright-core, no browser
 * download: it drives the Chromium above), for tests that click through a page. Closed with
 * `close()`.
 */
export async function openBrowserPage(executable: string): Promise<{ page: Page; close(): Promise<void> }> {
  const browser = await chromium.launch({
    executablePath: executable,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update'],
  });
  const page = await browser.newPage();
  return { page, close: () => browser.close() };
}
