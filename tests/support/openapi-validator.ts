import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { answeredPaths, loadOpenapiDocument } from '../../src/openapi-document';

/**
 * Validates real bodies against openapi.yaml with Ajv 2020 (the JSON Schema of OpenAPI 3.1), for
 * the places where Prism's own validation falls short. The whole document is registered once, so
 * every `$ref` resolves exactly as an integrator's tools resolve it.
 */
const document = loadOpenapiDocument();
/** The parsed openapi.yaml these validators judge by. */
export const contractDocument: Record<string, any> = document;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
ajv.addSchema(document, 'openapi.yaml');
const compiled = new Map<string, ValidateFunction>();

const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** The node a `$ref` of the document points to, followed until it is not a reference. */
export function deref(node: any): any {
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    node = node.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((at: any, part: string) => at[part.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  }
  return node;
}

/** Every path the server answers, as the document writes it: `paths`, and `x-unlisted-paths` (GET /{resource}). */
export const answeredPathItems: Record<string, Record<string, any>> = answeredPaths(document);

/** Where the document writes a path: under `paths`, or under `x-unlisted-paths`. */
const sectionOf = (path: string) => (document.paths?.[path] ? 'paths' : 'x-unlisted-paths');

/** The JSON pointer of the schema documented for an operation's response, or null if none. */
export function responseSchemaPointer(path: string, method: string, status: number, mediaType = 'application/json'): string | null {
  const operation = answeredPathItems[path]?.[method.toLowerCase()];
  if (!operation) throw new Error(`operation unknown to the document: ${method} ${path}`);
  const responses = operation.responses ?? {};
  const code = String(status) in responses ? String(status) : `${String(status)[0]}XX` in responses ? `${String(status)[0]}XX` : 'default';
  const response = deref(responses[code]);
  if (!response?.content?.[mediaType]?.schema) return null;
  // Follow the response's own $ref, if any, so the pointer lands on a schema Ajv can compile.
  const responseRef: string | undefined = responses[code]?.$ref;
  const base = responseRef ? responseRef : `#/${sectionOf(path)}/${escapePointer(path)}/${method.toLowerCase()}/responses/${code}`;
  return `openapi.yaml${base}/content/${escapePointer(mediaType)}/schema`;
}

/** The Ajv errors of a body against its documented schema (empty: valid). */
export function responseErrors(path: string, method: string, status: number, body: unknown, mediaType = 'application/json'): string[] {
  const pointer = responseSchemaPointer(path, method, status, mediaType);
  if (pointer === null) return [`aucun schéma documenté pour ${method} ${path} ${status} ${mediaType}`];
  let validate = compiled.get(pointer);
  if (!validate) {
    validate = ajv.getSchema(pointer);
    if (!validate) throw new Error(`schéma introuvable : ${pointer}`);
    compiled.set(pointer, validate);
  }
  return validate(body) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message}`);
}

/** The documented header names of a response (lower case). */
export function documentedHeaders(path: string, method: string, status: number): string[] {
  const response = deref(answeredPathItems[path]![method.toLowerCase()].responses[String(status)]);
  return Object.keys(response?.headers ?? {}).map((name) => name.toLowerCase());
}

/** The errors of a webhook body against the schema of its type in the `webhooks` section (empty: valid). */
export function webhookBodyErrors(body: { type: string }): string[] {
  const reference = document.webhooks?.[body.type]?.post?.requestBody?.content?.['application/json']?.schema?.$ref as string | undefined;
  if (!reference) return [`aucun schéma pour le type « ${body.type} »`];
  const validate = ajv.getSchema(`openapi.yaml${reference}`)!;
  return validate(body) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}

/** A schema of the document with every `$ref` replaced by its target, so that it compiles on its own. */
function inlineReferences(node: any): any {
  const target = deref(node);
  if (Array.isArray(target)) return target.map(inlineReferences);
  if (target === null || typeof target !== 'object') return target;
  return Object.fromEntries(Object.entries(target).map(([key, value]) => [key, inlineReferences(value)]));
}

const compiledBySchema = new WeakMap<object, ValidateFunction>();

/**
 * The keywords a value breaks in one schema of the document (`type`, `maxLength`, `required`…;
 * empty: valid), judged by Ajv 2020 on the value as given, with no coercion: the contract's own
 * rules, whatever the server does with them.
 */
export function schemaViolations(schema: object, value: unknown): string[] {
  let validate = compiledBySchema.get(schema);
  if (!validate) {
    validate = ajv.compile(inlineReferences(schema));
    compiledBySchema.set(schema, validate);
  }
  return validate(value) ? [] : [...new Set((validate.errors ?? []).map((error) => error.keyword))];
}
