import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const openapiPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'openapi.yaml');

/** openapi.yaml, the single source of truth: its text as served, and its parsed form. */
export const openapiText = readFileSync(openapiPath, 'utf8');

export function loadOpenapiDocument(): Record<string, any> {
  return parse(openapiText);
}

/** Each path of the document (Fastify syntax, without the /v1 prefix) with the methods it declares. */
export function declaredMethodsByPath(document: Record<string, any>): Map<string, string[]> {
  const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  const byPath = new Map<string, string[]>();
  for (const [openapiRoute, item] of Object.entries<Record<string, unknown>>(document.paths ?? {})) {
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

/**
 * The scopes each operation requires, by `METHOD /fastify/route` (with the given prefix): the
 * operation's own `security`, else the document's.
 */
export function requiredScopesByRoute(document: Record<string, any>, prefix: string): Map<string, string[]> {
  const byRoute = new Map<string, string[]>();
  for (const [route, methods] of declaredMethodsByPath(document)) {
    const openapiRoute = route.replace(/:([^/]+)/g, '{$1}');
    for (const method of methods) {
      const security: Record<string, string[]>[] = document.paths[openapiRoute][method.toLowerCase()].security ?? document.security ?? [];
      byRoute.set(
        `${method} ${prefix}${route}`,
        security.flatMap((requirement) => Object.values(requirement).flat()),
      );
    }
  }
  return byRoute;
}
