import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

/**
 * Validators for OpenAPI 3.1 (JSON Schema 2020-12). Query strings and paths are text, so their
 * values are coerced to the declared types; bodies are JSON, so they are taken as sent: `12`
 * never becomes `"12"`, and an unknown field is an error, not silently dropped.
 */
function createAjv(coerceTypes: boolean): Ajv2020 {
  // strict: false lets `example`, `examples` and `x-*` keywords of the document through; verbose
  // keeps the failing schema on each error, for its `x-pattern-description`.
  const ajv = new Ajv2020({ strict: false, coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, verbose: true });
  addFormats(ajv);
  return ajv;
}

const textAjv = createAjv(true);
const jsonAjv = createAjv(false);

type SchemaObject = { oneOf?: SchemaObject[]; required?: string[]; [keyword: string]: unknown };

/**
 * A `oneOf` of object shapes (POST /users: one learner, or a batch) is validated against the
 * branch whose required fields the body carries, so the error speaks of the shape the client meant.
 */
function compileBody(schema: SchemaObject): ValidateFunction {
  const branches = schema.oneOf;
  if (!branches?.every((branch) => Array.isArray(branch.required))) return jsonAjv.compile(schema);
  const compiled = branches.map((branch) => ({ required: branch.required!, validate: jsonAjv.compile(branch) }));
  const whole = jsonAjv.compile(schema);
  const dispatch = ((data: unknown) => {
    const body = data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : null;
    const meant = body && compiled.find((branch) => branch.required.every((field) => field in body));
    const validate = meant ? meant.validate : whole;
    const valid = validate(data);
    dispatch.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return dispatch;
}

/** Plain decimal text, the only spelling of a number a query string or a path may use. */
const decimalText = { integer: /^-?\d+$/, number: /^-?\d+(?:\.\d+)?$/ } as const;
type NumericType = keyof typeof decimalText;

function numericTypeOf(schema: unknown): NumericType | null {
  const declared = (schema as SchemaObject | undefined)?.type;
  const types = Array.isArray(declared) ? declared : [declared];
  if (types.includes('string')) return null;
  return types.includes('integer') ? 'integer' : types.includes('number') ? 'number' : null;
}

/** The error of a number not written in plain decimal, shaped like Ajv's for the message. */
function notDecimal(name: string, type: NumericType, index?: number): ErrorObject {
  const instancePath = `/${name}${index === undefined ? '' : `/${index}`}`;
  return { keyword: 'decimal', instancePath, schemaPath: `#/properties/${name}`, params: { type } };
}

/**
 * Query strings and paths: their numbers are text that Ajv coerces, and its coercion takes what
 * JavaScript's Number takes (`0x10`, `0b11`, `2e3`, `+5`, ` 5 `). A parameter declared as a number
 * (or an array of them) must be written in plain decimal, checked before Ajv sees the text.
 */
function compileText(schema: SchemaObject): ValidateFunction {
  const validate = textAjv.compile(schema);
  const numeric: { name: string; type: NumericType; inArray: boolean }[] = [];
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, SchemaObject>)) {
    const type = numericTypeOf(property);
    if (type) numeric.push({ name, type, inArray: false });
    const itemType = numericTypeOf(property?.items);
    if (itemType) numeric.push({ name, type: itemType, inArray: true });
  }
  if (numeric.length === 0) return validate;
  const checked = ((data: unknown) => {
    const values = (data ?? {}) as Record<string, unknown>;
    for (const { name, type, inArray } of numeric) {
      const value = values[name];
      if (!inArray && typeof value === 'string' && !decimalText[type].test(value)) {
        checked.errors = [notDecimal(name, type)];
        return false;
      }
      if (inArray && Array.isArray(value)) {
        const index = value.findIndex((item) => typeof item === 'string' && !decimalText[type].test(item));
        if (index >= 0) {
          checked.errors = [notDecimal(name, type, index)];
          return false;
        }
      }
    }
    const valid = validate(data);
    checked.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return checked;
}

/**
 * Headers: Node gives their names in lower case, and Fastify lower-cases the names of a header
 * schema only for its own compiler, not a custom one like this. So the schema's names are
 * lower-cased here (else `If-None-Match` never meets its rules), and errors name the header as the
 * document writes it.
 */
function compileHeaders(schema: SchemaObject): ValidateFunction {
  const declaredNames = new Map(Object.keys((schema.properties ?? {}) as object).map((name) => [name.toLowerCase(), name]));
  const lowerCased: SchemaObject = {
    ...schema,
    ...(schema.properties
      ? {
          properties: Object.fromEntries(
            Object.entries(schema.properties as Record<string, unknown>).map(([name, property]) => [name.toLowerCase(), property]),
          ),
        }
      : {}),
    ...(schema.required ? { required: schema.required.map((name) => name.toLowerCase()) } : {}),
  };
  const validate = textAjv.compile(lowerCased);
  const declared = (name: string) => declaredNames.get(name) ?? name;
  const named = ((data: unknown) => {
    const valid = validate(data);
    named.errors = validate.errors?.map((error) => {
      const [, first = '', ...rest] = error.instancePath.split('/');
      const params = error.params as Record<string, unknown>;
      return {
        ...error,
        instancePath: first ? ['', declared(first), ...rest].join('/') : '',
        params: typeof params.missingProperty === 'string' ? { ...params, missingProperty: declared(params.missingProperty) } : params,
      };
    });
    return valid;
  }) as ValidateFunction;
  return named;
}

export const validatorCompiler: FastifySchemaCompiler<SchemaObject> = ({ schema, httpPart }) =>
  httpPart === 'body' ? compileBody(schema) : httpPart === 'headers' ? compileHeaders(schema) : compileText(schema);

const typeNames: Record<string, string> = {
  integer: 'un nombre entier',
  number: 'un nombre',
  string: 'une chaîne de caractères',
  boolean: 'un booléen (true ou false)',
  array: 'un tableau',
  object: 'un objet JSON',
  null: 'null',
};
const formatNames: Record<string, string> = {
  email: 'une adresse électronique valide',
  uuid: 'un identifiant UUID',
  date: 'une date au format AAAA-MM-JJ',
  'date-time': 'une date et heure ISO 8601',
};

function describe(error: ErrorObject): string {
  const p = error.params as Record<string, any>;
  switch (error.keyword) {
    case 'decimal':
      return `doit être ${p.type === 'integer' ? 'un nombre entier' : 'un nombre'} écrit en chiffres décimaux (par exemple ${p.type === 'integer' ? '42' : '4.2'})`;
    case 'type':
      return `doit être ${String(p.type)
        .split(',')
        .map((t) => typeNames[t] ?? t)
        .join(' ou ')}`;
    case 'minimum':
      return `doit être supérieur ou égal à ${p.limit}`;
    case 'maximum':
      return `doit être inférieur ou égal à ${p.limit}`;
    case 'exclusiveMinimum':
      return `doit être strictement supérieur à ${p.limit}`;
    case 'exclusiveMaximum':
      return `doit être strictement inférieur à ${p.limit}`;
    case 'enum':
      return `doit valoir l’une des valeurs suivantes : ${(p.allowedValues as unknown[]).join(', ')}`;
    case 'const':
      return `doit valoir ${JSON.stringify(p.allowedValue)}`;
    case 'format':
      return `doit être ${formatNames[p.format] ?? `au format ${p.format}`}`;
    case 'pattern': {
      // The document says in words what a pattern means (`x-pattern-description`), when it can.
      const meaning = (error.parentSchema as Record<string, unknown> | undefined)?.['x-pattern-description'];
      return typeof meaning === 'string' ? `doit être ${meaning}` : 'n’a pas le format attendu';
    }
    case 'minLength':
      return `doit contenir au moins ${p.limit} caractère(s)`;
    case 'maxLength':
      return `doit contenir au plus ${p.limit} caractères`;
    case 'minItems':
      return `doit contenir au moins ${p.limit} élément(s)`;
    case 'maxItems':
      return `doit contenir au plus ${p.limit} éléments`;
    case 'uniqueItems':
      return 'ne doit pas contenir de doublons';
    case 'oneOf':
    case 'anyOf':
      return 'ne correspond à aucune des formes attendues';
    default:
      return 'est invalide';
  }
}

/** `/users/3/email` -> `users[3].email` */
function fieldPath(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

/** One French sentence for Fastify's validation error, naming the parameter or field at fault. */
export function frenchValidationMessage(errors: ErrorObject[], part: string | undefined): string {
  const error = errors[0];
  if (!error) return 'Requête invalide.';
  const p = error.params as Record<string, any>;
  const base = fieldPath(error.instancePath);
  const join = (name: string) => (base ? `${base}.${name}` : name);
  if (part === 'body') {
    if (error.keyword === 'required') return `Corps de la requête invalide : le champ « ${join(p.missingProperty)} » est obligatoire.`;
    if (error.keyword === 'additionalProperties')
      return `Corps de la requête invalide : le champ « ${join(p.additionalProperty)} » n’est pas reconnu.`;
    return base
      ? `Corps de la requête invalide : « ${base} » ${describe(error)}.`
      : `Corps de la requête invalide : il ${describe(error)}.`;
  }
  const noun = part === 'params' ? 'Segment d’adresse' : part === 'headers' ? 'En-tête' : 'Paramètre';
  if (error.keyword === 'required') return `${noun} « ${p.missingProperty} » obligatoire.`;
  if (error.keyword === 'additionalProperties') return `${noun} « ${p.additionalProperty} » non reconnu.`;
  return `${noun} « ${base} » invalide : il ${describe(error)}.`;
}

/** The parameter or body field a validation error names (what `frenchValidationMessage` quotes); undefined for the body as a whole. */
export function validationParam(errors: ErrorObject[]): string | undefined {
  const error = errors[0];
  if (!error) return undefined;
  const p = error.params as Record<string, any>;
  const base = fieldPath(error.instancePath);
  const join = (name: string) => (base ? `${base}.${name}` : name);
  if (error.keyword === 'required') return join(p.missingProperty);
  if (error.keyword === 'additionalProperties') return join(p.additionalProperty);
  return base || undefined;
}
