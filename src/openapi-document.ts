import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { ListOperation } from '../db/resource-registry';

/** The project's folder: one above src/ here, and one above dist/ in the bundle `npm start` runs. */
export const projectFolder = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

export const openapiPath = path.join(projectFolder, 'openapi.yaml');

/** Where the partner API's operations are answered and its document and docs served. */
export const apiPrefix = '/v1';

/** openapi.yaml, the single source of truth: its text as served, and its parsed form. */
export const openapiText = readFileSync(openapiPath, 'utf8');

export function loadOpenapiDocument(): Record<string, any> {
  return parse(openapiText);
}

/** management.yaml, the management API's contract (/manage/v1): its text as served, and its parsed form. */
export const managementText = readFileSync(path.join(path.dirname(openapiPath), 'management.yaml'), 'utf8');

export function loadManagementDocument(): Record<string, any> {
  return parse(managementText);
}

/**
 * The paths the server answers: the document's `paths`, and its `x-unlisted-paths` (GET /{resource},
 * answered like any path but kept out of `paths`, where client generators would make it a method).
 */
export function answeredPaths(document: Record<string, any>): Record<string, Record<string, any>> {
  return { ...document.paths, ...document['x-unlisted-paths'] };
}

/**
 * The list operations of the document, in the order of its paths: every GET of `paths` whose JSON
 * answer is a page of rows (`pagination` and `data`), with its path's segment, the resource's name.
 * Each is answered by its definition in db/resources/ (db/resource-registry.ts).
 */
export function listOperations(document: Record<string, any>): ListOperation[] {
  return Object.entries<Record<string, any>>(document.paths ?? {}).flatMap(([route, item]) => {
    const schema = item.get?.responses?.['200']?.content?.['application/json']?.schema;
    const page = schema && resolveReference(document, schema);
    return page?.properties?.pagination && page.properties.data ? [{ operationId: item.get.operationId, name: route.slice(1) }] : [];
  });
}

/** A schema, or the schema its local `$ref` (`#/components/schemas/…`) points to. */
function resolveReference(document: Record<string, any>, schema: Record<string, any>): Record<string, any> | undefined {
  if (typeof schema.$ref !== 'string') return schema;
  const target = schema.$ref
    .split('/')
    .slice(1)
    .reduce((node: any, key: string) => node?.[key], document);
  return target && resolveReference(document, target);
}

/** The document as fastify-openapi-glue routes it: every answered path under `paths`. */
export function routedDocument(document: Record<string, any>): Record<string, any> {
  const { 'x-unlisted-paths': unlisted, ...routed } = structuredClone(document);
  return { ...routed, paths: { ...routed.paths, ...unlisted } };
}

/**
 * The media types the document names for answers only (files: CSV, workbook, PDF): glue registers
 * a parser for every media type it meets, so a request body of one of them would be read, not 415.
 */
export function answerOnlyMediaTypes(document: Record<string, any>): string[] {
  const requestTypes = new Set<string>();
  const answerTypes = new Set<string>();
  for (const item of Object.values<Record<string, any>>(answeredPaths(document))) {
    for (const operation of Object.values<Record<string, any>>(item)) {
      if (typeof operation !== 'object' || operation === null) continue;
      for (const type of Object.keys(operation.requestBody?.content ?? {})) requestTypes.add(type);
      for (const answer of Object.values<Record<string, any>>(operation.responses ?? {})) {
        for (const type of Object.keys(answer.content ?? {})) answerTypes.add(type);
      }
    }
  }
  return [...answerTypes].filter((type) => !requestTypes.has(type) && type !== 'application/json');
}

/** Each path the server answers (Fastify syntax, without the /v1 prefix) with the methods it declares. */
export function declaredMethodsByPath(document: Record<string, any>): Map<string, string[]> {
  const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  const byPath = new Map<string, string[]>();
  for (const [openapiRoute, item] of Object.entries<Record<string, unknown>>(answeredPaths(document))) {
    const route = openapiRoute.replace(/\{([^}]+)\}/g, ':$1');
    byPath.set(
      route,
      Object.keys(item)
        .filter((key) => httpMethods.includes(key))
        .map((m) => m.toUpperCase()),
    );
  }
  return byPath;
}

/** Each operation of the document by `METHOD /fastify/route` (with the given prefix), as Fastify names its route. */
export function operationsByRoute(document: Record<string, any>, prefix: string): Map<string, Record<string, any>> {
  const byRoute = new Map<string, Record<string, any>>();
  const paths = answeredPaths(document);
  for (const [route, methods] of declaredMethodsByPath(document)) {
    const openapiRoute = route.replace(/:([^/]+)/g, '{$1}');
    for (const method of methods) byRoute.set(`${method} ${prefix}${route}`, paths[openapiRoute]![method.toLowerCase()]);
  }
  return byRoute;
}

/** The scopes each operation requires, by `METHOD /fastify/route`: the operation's own `security`, else the document's. */
export function requiredScopesByRoute(document: Record<string, any>, prefix: string): Map<string, string[]> {
  const byRoute = new Map<string, string[]>();
  for (const [route, operation] of operationsByRoute(document, prefix)) {
    const security: Record<string, string[]>[] = operation.security ?? document.security ?? [];
    byRoute.set(
      route,
      security.flatMap((requirement) => Object.values(requirement).flat()),
    );
  }
  return byRoute;
}

/**
 * The `data` of the first example openapi.yaml gives a webhook event type (its body's schema's
 * `examples`): what `sendWebhookExample` sends. Undefined for a type without one.
 */
export function webhookExampleData(document: Record<string, any>, eventType: string): unknown {
  const ref: string | undefined = document.webhooks?.[eventType]?.post?.requestBody?.content?.['application/json']?.schema?.$ref;
  const schema = ref?.startsWith('#/components/schemas/')
    ? document.components.schemas[ref.slice('#/components/schemas/'.length)]
    : undefined;
  return schema?.examples?.[0]?.data;
}

/**
 * The event types an endpoint may subscribe to, with what openapi.yaml says of each: its summary,
 * and the first paragraph of its description (what triggers it).
 */
export function webhookEventCatalogue(document: Record<string, any>, eventTypes: readonly string[]) {
  return eventTypes.map((eventType) => {
    const operation = document.webhooks[eventType].post;
    return {
      event_type: eventType,
      summary: String(operation.summary),
      // Plain text for the page: the Markdown's code quotes dropped, its line breaks joined.
      description: String(operation.description).split('\n\n')[0]!.replaceAll('`', '').replace(/\s+/g, ' ').trim(),
    };
  });
}
