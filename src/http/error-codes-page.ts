import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { type ErrorCode, errorStatus } from './errors';
import { escapeHtml } from './html';

/*
 * Each API's page of error codes: a row per code its document declares (`ErrorCode`), with its
 * HTTP status and its description, anchored by the code. An error body's `doc_url` points at its
 * row, so a developer who meets a code in a log reaches its explanation in one click.
 */

/** Where an API's error codes are explained, below its prefix. */
const errorCodesPath = '/docs/errors';

/**
 * The address of a code's explanation on the page of the API below `apiPrefix`: on the server's
 * public `origin`, or relative to the server called when its origin is not known.
 */
export function errorDocUrl(origin: string | null, apiPrefix: string, code: ErrorCode): string {
  return `${origin ?? ''}${apiPrefix}${errorCodesPath}#${code}`;
}

/** A description's `code spans` as <code>, the rest as text. */
function describedHtml(description: string): string {
  return escapeHtml(description).replace(/`([^`]+)`/g, '<code>$1</code>');
}

const style = `body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem;color:#1a1a1a}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ccc;padding:.5rem;text-align:left;vertical-align:top}
tr:target{background:#fff3bf}code{font-size:.95em}a{color:#0b4fa8}`;

/** The page's headers: no script at all, its one style by hash, framed by nobody. */
const pageHeaders = {
  'Content-Security-Policy': `default-src 'none'; style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'; base-uri 'none'; frame-ancestors 'none'`,
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'public, max-age=300',
};

/** A code as a document declares it: `{const, description}` in a `oneOf`. */
type DescribedCode<Code extends string = string> = { const: Code; description: string };

/** The page of a document's error codes, in the document's order, and its webhook failure codes when it has some. */
function errorCodesPage(document: Record<string, any>, apiPrefix: string): string {
  const codes: DescribedCode<ErrorCode>[] = document.components.schemas.ErrorCode.oneOf;
  const rows = codes
    .map(
      (entry) =>
        `<tr id="${entry.const}"><th scope="row"><code>${entry.const}</code></th><td>${errorStatus(entry.const)}</td><td>${describedHtml(entry.description)}</td></tr>`,
    )
    .join('\n');
  const failures: DescribedCode[] | undefined = document.components.schemas.WebhookFailureCode?.oneOf;
  const failureSection = failures
    ? `<h2>Échecs de livraison des webhooks</h2>
<p>Dans le journal des livraisons, chaque tentative échouée a un <code>error_code</code> stable, à côté de sa phrase <code>error</code>.</p>
<table><caption>Codes d’échec d’une tentative de livraison</caption>
<thead><tr><th scope="col">Code</th><th scope="col">Signification</th></tr></thead>
<tbody>
${failures.map((entry) => `<tr id="${webhookFailureAnchor(entry.const)}"><th scope="row"><code>${entry.const}</code></th><td>${describedHtml(entry.description)}</td></tr>`).join('\n')}
</tbody></table>
`
    : '';
  const title = `Codes d’erreur — ${escapeHtml(document.info.title)}`;
  return `<!doctype html>
<html lang="fr"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><style>${style}</style></head>
<body><main>
<h1>${title}</h1>
<p>Chaque erreur a pour corps <code>{"error", "code", "doc_url"}</code>, plus <code>param</code> quand un paramètre ou un champ est en cause. Le message <code>error</code> est une phrase en français qui peut évoluer ; le <code>code</code> est stable : c’est lui qu’un programme doit tester. Voir aussi la <a href="${apiPrefix}/docs/">référence de l’API</a>.</p>
<table><caption>Codes d’erreur, avec leur statut HTTP</caption>
<thead><tr><th scope="col">Code</th><th scope="col">Statut</th><th scope="col">Signification et conduite à tenir</th></tr></thead>
<tbody>
${rows}
</tbody></table>
${failureSection}</main></body></html>
`;
}

/** A webhook failure code's row on the page: apart from the error codes' anchors. */
function webhookFailureAnchor(code: string): string {
  return `webhook-${code}`;
}

/** Serves the page of a document's error codes at `<prefix>/docs/errors`, with no credential. */
export function registerErrorCodesPage(app: FastifyInstance, document: Record<string, any>, apiPrefix: string): void {
  const html = errorCodesPage(document, apiPrefix);
  app.get(`${apiPrefix}${errorCodesPath}`, async (_request, reply) =>
    reply.headers(pageHeaders).type('text/html; charset=utf-8').send(html),
  );
}
