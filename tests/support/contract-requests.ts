import { METHODS } from 'node:http';
import fc from 'fast-check';
import { answeredPathItems, contractDocument, deref, schemaViolations } from './openapi-validator';

/*
 * Requests generated from openapi.yaml, for tests/contract.properties.test.ts. Operations,
 * parameters, headers, body fields and every rule they carry (type, format, pattern, enum, bounds,
 * lengths, item counts, required and unknown fields) are read from the parsed document, so a new
 * parameter or a new bound is generated without touching this file. What a schema cannot know
 * (which learners and programmes exist, which keys work) comes from the test's fixture.
 *
 * Every generated request carries what the contract says it must get (`expect`): either the
 * answer itself (a value beyond its rule: 400 naming it), or "a valid request" that the test's
 * oracle judges against the server's state (success, or a declared business answer).
 */

type Schema = Record<string, any>;
export type Location = 'query' | 'header' | 'path' | 'body';

/** One parameter of an operation, as the document declares it. */
export interface ParameterSlot {
  location: Exclude<Location, 'body'>;
  name: string;
  schema: Schema;
  required: boolean;
}

/** One operation of the document, with what the generator and the oracle need of it. */
export interface ContractOperation {
  /** As written in the document: `/users`, `/{resource}`. */
  path: string;
  method: string;
  operationId: string;
  parameters: ParameterSlot[];
  body: { schema: Schema; mediaTypes: string[] } | null;
  /** Every status the operation declares. */
  statuses: string[];
  /** Its success statuses (2xx and 304). */
  successStatuses: number[];
  /** Media types of its 200 answer. */
  answerMediaTypes: string[];
  requiredScopes: string[];
}

const document = contractDocument;
const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation the server answers: those of `paths`, and GET /{resource} of `x-unlisted-paths`. */
export const contractOperations: ContractOperation[] = Object.entries<any>(answeredPathItems).flatMap(([path, item]) =>
  httpMethods
    .filter((method) => item[method])
    .map((method): ContractOperation => {
      const operation = item[method];
      const parameters = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(deref).map(
        (parameter: any): ParameterSlot => ({
          location: parameter.in,
          name: parameter.name,
          schema: deref(parameter.schema),
          required: parameter.required === true,
        }),
      );
      const requestBody = deref(operation.requestBody);
      const statuses = Object.keys(operation.responses);
      const security: Record<string, string[]>[] = operation.security ?? document.security ?? [];
      return {
        path,
        method: method.toUpperCase(),
        operationId: operation.operationId,
        parameters,
        body: requestBody
          ? {
              schema: deref(requestBody.content['application/json'].schema),
              mediaTypes: Object.keys(requestBody.content),
            }
          : null,
        statuses,
        successStatuses: statuses.map(Number).filter((status) => (status >= 200 && status < 300) || status === 304),
        answerMediaTypes: Object.keys(deref(operation.responses['200'])?.content ?? {}),
        requiredScopes: security.flatMap((requirement) => Object.values(requirement).flat()),
      };
    }),
);

/** The methods the document declares on a path, in its order (what `Allow` must list). */
export function declaredMethods(path: string): string[] {
  return httpMethods.filter((method) => answeredPathItems[path]![method]).map((method) => method.toUpperCase());
}

/** The API's prefix, from the document's first server (`…/v1`). */
export const apiPrefix = new URL(document.servers[0].url).pathname;

/** Limits the contract states in words: bodies up to 1 MiB (413 beyond), URLs up to 8,192 characters (414 beyond). */
export const bodyLimitBytes = 1024 * 1024;
export const urlLimitCharacters = 8192;

// ---------------------------------------------------------------------------------------------
// Judging a value by the contract

const decimalInteger = /^-?(?:0|[1-9][0-9]*)$/;
const jsonNumber = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * The rules a parameter's text breaks (empty: valid). The text is first read by its type the way
 * a person reads the contract: an integer is written in decimal digits, nothing else, so `0x10`,
 * `+5`, `2e3`, `5.0` or ` 5` are not integers, to be refused rather than coerced
 * (docs/decisions.md#errors); then the value is judged by the schema (Ajv 2020, no coercion).
 */
export function textViolations(schema: Schema, text: string): string[] {
  let value: unknown = text;
  if (schema.type === 'integer') value = decimalInteger.test(text) ? Number(text) : undefined;
  if (schema.type === 'number') value = jsonNumber.test(text) ? Number(text) : undefined;
  if (schema.type === 'boolean') value = text === 'true' ? true : text === 'false' ? false : undefined;
  return value === undefined ? ['type'] : schemaViolations(schema, value);
}

// ---------------------------------------------------------------------------------------------
// Values of one text input (query, header, path, or a string field of the body)

/** What the fixture holds: the values a schema cannot invent. */
export interface KnownValues {
  learners: { email: string; userId: string }[];
  programmeSlugs: string[];
  /** An allowed domain, for the fresh addresses that enrol new learners. */
  emailDomain: string;
}

/** An address of exactly `length` characters: `stem` padded with `a`, at `domain`. */
export function addressOfLength(length: number, domain: string, stem = ''): string {
  const localLength = Math.max(1, length - domain.length - 1);
  return `${(stem + 'a'.repeat(localLength)).slice(0, localLength)}@${domain}`;
}

/** The `programme` parameter's slug rule: strings under it are programme slugs (the fixture knows which exist). */
const programmeSlugPattern: string = deref(document.components.parameters.programme).schema.pattern;

interface Hint {
  /** Values of the fixture that fit this input: existing learners, programmes. */
  examples: string[];
  /** An address, whatever the schema says (the enrolment's `email` is a plain string up to 320). */
  emailShaped: boolean;
}

function hintFor(schema: Schema, name: string, known: KnownValues): Hint {
  const emailShaped = schema.format === 'email' || name === 'email';
  if (emailShaped) {
    const emails = known.learners.map((learner) => learner.email);
    // Emails match whatever their case (the contract: "sans tenir compte de la casse").
    return { examples: [...emails, ...emails.slice(0, 3).map((email) => email.toUpperCase())], emailShaped };
  }
  if (schema.format === 'uuid') {
    const ids = known.learners.map((learner) => learner.userId);
    return { examples: [...ids, ...ids.slice(0, 2).map((id) => id.toUpperCase())], emailShaped };
  }
  if (schema.pattern === programmeSlugPattern) return { examples: known.programmeSlugs, emailShaped };
  // Conditional requests: any tag, or `*` (then a JSON answer is 304).
  if (name.toLowerCase() === 'if-none-match') return { examples: ['*', 'W/"u3vF1mQ0l9oTzv6bC2d2xkq1w8E"', '"a", W/"b"'], emailShaped };
  return { examples: [], emailShaped };
}

/** A text of exactly `length` characters that breaks none of the schema's rules but its length ones (none for a uuid or a date). */
function textOfLength(schema: Schema, length: number, hint: Hint, domain: string): string | undefined {
  if (length < 0) return undefined;
  const candidates = [...(hint.emailShaped && length > domain.length + 1 ? [addressOfLength(length, domain)] : []), 'a', 'x', '0'].map(
    (candidate) => (candidate.length === length ? candidate : candidate.repeat(length)),
  );
  return candidates.find(
    (candidate) => candidate.length === length && textViolations(schema, candidate).every((rule) => /^(min|max)Length$/.test(rule)),
  );
}

/** Near misses of each format: some valid, most not (the judge says which). */
const formatProbes: Record<string, string[]> = {
  email: ['pas-une-adresse', 'a@', '@exemple.fr', 'a b@exemple.fr', 'a@@exemple.fr', 'A@B', 'claire.martin@exemple.fr'],
  uuid: [
    '123',
    '0f8c2d4e-6a1b-4c3d-8e9f-1a2b3c4d5e6f',
    '0f8c2d4e-6a1b-4c3d-8e9f-1a2b3c4d5e6f0',
    '0f8c2d4e6a1b4c3d8e9f1a2b3c4d5e6f',
    '0f8c2d4e-6a1b-4c3d-8e9f-1a2b3c4d5e6g',
    'urn:uuid:0f8c2d4e-6a1b-4c3d-8e9f-1a2b3c4d5e6f',
  ],
  date: [
    '0000-01-01',
    '1999-12-31',
    '2000-01-01',
    '2024-02-29',
    '2025-02-29',
    '2026-02-30',
    '2026-13-01',
    '2026-00-10',
    '2026-1-1',
    '20260101',
    '2026-01-01T00:00:00Z',
    '2100-12-31',
    '2101-01-01',
    '9999-12-31',
  ],
};

/** Text that breaks things elsewhere: quotes, SQL, NUL, non-BMP, percent signs, paths. */
const hostileTexts = ['', ' ', "'; drop table accounts; --", '"', '%', '%ff', '\u0000', '😀', 'Ñandú', '../..', 'null', '[]'];

/**
 * Texts at and beyond every bound of a schema, other spellings of a valid number, near misses of
 * its format, pattern and enum, and hostile text. The judge sorts them into valid and invalid.
 */
function probeTexts(schema: Schema, hint: Hint, domain: string): string[] {
  const probes: (string | undefined)[] = [...hostileTexts, ...hint.examples];
  if (schema.type === 'integer' || schema.type === 'number') {
    const low: number = schema.minimum ?? -1_000_000;
    const high: number = schema.maximum ?? 1_000_000;
    probes.push(...[low - 1, low, low + 1, high - 1, high, high + 1].map(String));
    // One valid value, spelled the ways coercion would accept: none is an integer on the wire.
    const value = Math.min(high, low + 16);
    probes.push(`0x${value.toString(16)}`, `0o${value.toString(8)}`, `0b${value.toString(2)}`, `+${value}`, `${value}e0`);
    probes.push(value.toExponential(), `${value}.0`, ` ${value}`, `${value} `, `${value}.5`, `${value},${value}`, `${value}_0`);
    probes.push('abc', 'Infinity', '-Infinity', 'NaN', '1e400', '9'.repeat(20), `-${'9'.repeat(20)}`, 'true');
  }
  if (schema.type === 'boolean') probes.push('true', 'false', 'TRUE', '1', '0', 'yes');
  if (schema.type === 'string') {
    for (const value of schema.enum ?? []) probes.push(value, value.toUpperCase(), `${value} `, `${value}x`);
    const minLength: number = schema.minLength ?? 0;
    probes.push(textOfLength(schema, minLength, hint, domain), textOfLength(schema, minLength - 1, hint, domain));
    if (schema.maxLength !== undefined) {
      for (const length of [schema.maxLength - 1, schema.maxLength, schema.maxLength + 1, schema.maxLength * 3])
        probes.push(textOfLength(schema, length, hint, domain));
    }
    probes.push(...(formatProbes[schema.format] ?? []));
    if (schema.pattern) {
      const sample = hint.examples[0] ?? 'a1-b2';
      probes.push(sample.toUpperCase(), `-${sample}`, `${sample}-`, `${sample}--x`, `${sample}_x`, `${sample} x`, `${sample}é`);
    }
  }
  return [...new Set(probes.filter((probe): probe is string => probe !== undefined))];
}

/** Broad random values of the schema's type and format (valid or not: the judge sorts them). */
function randomTexts(schema: Schema): fc.Arbitrary<string> {
  if (schema.type === 'integer') {
    const low: number = schema.minimum ?? -1_000_000;
    const high: number = schema.maximum ?? 1_000_000;
    return fc.oneof(fc.integer({ min: low, max: Math.min(high, low + 100) }), fc.integer({ min: low, max: high })).map(String);
  }
  if (schema.type === 'boolean') return fc.boolean().map(String);
  if (schema.enum) return fc.constantFrom(...schema.enum.map(String));
  if (schema.format === 'email') return fc.emailAddress();
  if (schema.format === 'uuid') return fc.uuid();
  if (schema.format === 'date')
    return fc
      .date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2110-12-31T00:00:00Z'), noInvalidDate: true })
      .map((date) => date.toISOString().slice(0, 10));
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern), { size: 'small' });
  return fc.string({ maxLength: Math.min(schema.maxLength ?? 40, 40) });
}

/** A value beyond its rules, with the rules it breaks. */
export interface InvalidText {
  text: string;
  rules: string[];
}

/** The values of one text input: valid ones (bounds and fixture values included), and invalid ones with their rules. */
export interface TextValues {
  valid: fc.Arbitrary<string>;
  invalid: fc.Arbitrary<InvalidText> | null;
  /** Every rule some invalid value breaks (the generator's coverage). */
  invalidRules: Set<string>;
}

/** Header values must be visible ASCII (Node refuses others before any route), and a path segment must name something else than a declared path. */
function fitsLocation(location: Location, text: string): boolean {
  if (location === 'header') return /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(text);
  if (location === 'path') return text !== '' && !/^\.+$/.test(text) && !(`/${text}` in answeredPathItems);
  return true;
}

export function textValues(location: Location, name: string, schema: Schema, known: KnownValues): TextValues {
  const hint = hintFor(schema, name, known);
  const fits = (text: string) => fitsLocation(location, text);
  const isValid = (text: string) => textViolations(schema, text).length === 0;
  const judged = probeTexts(schema, hint, known.emailDomain)
    .filter(fits)
    .map((text) => ({ text, rules: textViolations(schema, text) }));
  const validProbes = judged.filter((probe) => probe.rules.length === 0).map((probe) => probe.text);
  const invalidProbes = judged.filter((probe) => probe.rules.length > 0);
  const validExamples = hint.examples.filter((text) => fits(text) && isValid(text));
  const valid = fc.oneof(
    ...(validExamples.length > 0 ? [{ weight: 6, arbitrary: fc.constantFrom(...validExamples) }] : []),
    ...(validProbes.length > 0 ? [{ weight: 1, arbitrary: fc.constantFrom(...validProbes) }] : []),
    { weight: 1, arbitrary: randomTexts(schema).filter((text) => fits(text) && isValid(text)) },
  );
  return {
    valid,
    invalid: invalidProbes.length > 0 ? fc.constantFrom(...invalidProbes) : null,
    invalidRules: new Set(invalidProbes.flatMap((probe) => probe.rules)),
  };
}

// ---------------------------------------------------------------------------------------------
// JSON bodies

/** A body with one value beyond its rule: where (`users[3].email`), which names the error may use, and the rules. */
export interface BodyViolation {
  value: unknown;
  field: string;
  names: string[];
  rules: string[];
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Every field name the document's schemas define: an unknown field is none of them (not even another shape's). */
const documentFieldNames = new Set(
  Object.values<Schema>(document.components.schemas).flatMap((schema) => Object.keys(schema.properties ?? {})),
);

/** JSON values of every type; those of another type than the schema's break its `type`. */
const jsonOfEveryType: unknown[] = [42, 1.5, true, 'texte', null, [], {}];

/** Builds body values from a schema: valid ones, and ones with exactly one value beyond its rule. */
export class BodyValues {
  private readonly validCache = new Map<object, Map<string, fc.Arbitrary<unknown>>>();
  private readonly violationCache = new Map<object, fc.Arbitrary<BodyViolation>>();

  /**
   * `fixtureValuesOnly`: strings the fixture knows wherever it knows some (existing programmes,
   * addresses the server accepts), so that even a batch of 50 entries of 100 slugs each can be a
   * success; otherwise any value within the rules (an unknown slug then refuses the whole body).
   */
  constructor(
    private readonly known: KnownValues,
    private readonly options: { fixtureValuesOnly: boolean } = { fixtureValuesOnly: false },
  ) {}

  /** Valid values; arrays at their item bounds now and then, strings at their length bounds. */
  valid(node: Schema, name = ''): fc.Arbitrary<unknown> {
    const schema = deref(node);
    const byName = this.validCache.get(schema) ?? new Map<string, fc.Arbitrary<unknown>>();
    this.validCache.set(schema, byName);
    const cached = byName.get(name);
    if (cached) return cached;
    const built = this.buildValid(schema, name);
    byName.set(name, built);
    return built;
  }

  private buildValid(schema: Schema, name: string): fc.Arbitrary<unknown> {
    if (schema.oneOf) return fc.oneof(...schema.oneOf.map((branch: Schema) => this.valid(branch, name)));
    switch (schema.type) {
      case 'object':
        return fc.record(
          Object.fromEntries(Object.entries<Schema>(schema.properties ?? {}).map(([key, property]) => [key, this.valid(property, key)])),
          { requiredKeys: schema.required ?? [] },
        );
      case 'array': {
        const minItems: number = schema.minItems ?? 0;
        const maxItems: number = schema.maxItems ?? minItems + 10;
        const length = fc.oneof(
          { weight: 6, arbitrary: fc.integer({ min: minItems, max: Math.min(maxItems, minItems + 3) }) },
          { weight: 1, arbitrary: fc.constantFrom(minItems, maxItems) },
        );
        const item = this.valid(schema.items, name);
        return length.chain((count) => fc.array(item, { minLength: count, maxLength: count }));
      }
      case 'string': {
        const values = textValues('body', name, schema, this.known).valid;
        const hint = hintFor(schema, name, this.known);
        const examples = hint.examples.filter((text) => schemaViolations(schema, text).length === 0);
        if (hint.emailShaped) {
          const known = this.options.fixtureValuesOnly && examples.length > 0 ? fc.constantFrom(...examples) : values;
          return fc.oneof({ weight: 6, arbitrary: this.freshAddresses(schema) }, { weight: 2, arbitrary: known });
        }
        return this.options.fixtureValuesOnly && examples.length > 0 ? fc.constantFrom(...examples) : values;
      }
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
      default:
        return fc.constant(null);
    }
  }

  /**
   * Addresses nobody holds yet, in any case and with spaces around (the server trims and lowers
   * them), some exactly at the length the server allows an address (the `email` parameter's
   * maxLength, "même règle que le paramètre email") and some one beyond it.
   */
  private freshAddresses(schema: Schema): fc.Arbitrary<string> {
    const serverLimit: number = deref(document.components.parameters.email).schema.maxLength;
    const domain = this.known.emailDomain;
    return fc
      .tuple(fc.stringMatching(/^[a-z]{1,10}$/), fc.nat(), fc.nat(9))
      .map(([name, number, dice]) => {
        const stem = `${name}.${number}`;
        if (dice === 0) return addressOfLength(serverLimit, domain, `${stem}.`);
        if (dice === 1 && !this.options.fixtureValuesOnly) return addressOfLength(serverLimit + 1, domain, `${stem}.`);
        if (dice === 2) return `  ${stem.toUpperCase()}@${domain.toUpperCase()} `;
        return `${stem}@${domain}`;
      })
      .filter((address) => schemaViolations(schema, address).length === 0);
  }

  /**
   * Values with exactly one value beyond its rule, anywhere in the tree: a field of the wrong type,
   * a string beyond its length, pattern or format, an array beyond its item bounds, an item that
   * breaks its own rule, a required field missing, an unknown field. The root itself keeps its
   * type (a body that is not an object is a transport case).
   */
  violations(node: Schema): fc.Arbitrary<BodyViolation> {
    const schema = deref(node);
    const cached = this.violationCache.get(schema);
    if (cached) return cached;
    const built = fc.oneof(...this.violationKinds(schema, '', ''));
    this.violationCache.set(schema, built);
    return built;
  }

  /**
   * One arbitrary per kind of violation in the tree (a field and a rule), flat, so that a field deep
   * in a batch is as likely to be broken as one at the root. An item's index is chosen when drawn:
   * below an array, paths hold `[#]` until then.
   */
  private violationKinds(node: Schema, path: string, name: string): fc.Arbitrary<BodyViolation>[] {
    const schema = deref(node);
    const here = (value: unknown, rules: string[]): BodyViolation => ({ value, field: path, names: [path], rules });
    if (schema.oneOf) {
      // The server judges a body by the shape whose required fields it carries; without any, it
      // cannot tell which shape was meant, so a missing required field may be named by any shape.
      const requiredOfAll: string[] = schema.oneOf.flatMap((branch: Schema) =>
        (deref(branch).required ?? []).map((key: string) => join(path, key)),
      );
      return schema.oneOf.flatMap((branch: Schema) =>
        this.violationKinds(branch, path, name).map((kind) =>
          kind.map((violation) =>
            violation.rules.includes('required') && requiredOfAll.includes(violation.field)
              ? { ...violation, names: [...new Set([...violation.names, ...requiredOfAll])] }
              : violation,
          ),
        ),
      );
    }
    const kinds: fc.Arbitrary<BodyViolation>[] = [];
    const wrongTypes = jsonOfEveryType.filter((value) => schemaViolations(schema, value).includes('type'));
    if (path !== '' && wrongTypes.length > 0) kinds.push(fc.constantFrom(...wrongTypes).map((value) => here(value, ['type'])));
    switch (schema.type) {
      case 'object': {
        const whole = this.valid(schema, name) as fc.Arbitrary<Record<string, unknown>>;
        for (const [key, property] of Object.entries<Schema>(schema.properties ?? {})) {
          for (const kind of this.violationKinds(property, join(path, key), key)) {
            kinds.push(
              fc.tuple(whole, kind).map(([object, violation]) => ({ ...violation, value: { ...object, [key]: violation.value } })),
            );
          }
        }
        for (const key of schema.required ?? []) {
          kinds.push(
            whole.map((object) => {
              const { [key]: _missing, ...rest } = object;
              return { value: rest, field: join(path, key), names: [join(path, key)], rules: ['required'] };
            }),
          );
        }
        if (schema.additionalProperties === false) {
          const unknownName = fc.stringMatching(/^[a-z][a-z_]{0,11}$/).filter((candidate) => !documentFieldNames.has(candidate));
          kinds.push(
            fc.tuple(whole, unknownName).map(([object, extra]) => ({
              value: { ...object, [extra]: 'x' },
              field: join(path, extra),
              names: [join(path, extra)],
              rules: ['additionalProperties'],
            })),
          );
        }
        break;
      }
      case 'array': {
        const item = this.valid(schema.items, name);
        const itemsOf = (count: number) => fc.array(item, { minLength: count, maxLength: count });
        if ((schema.minItems ?? 0) > 0) kinds.push(itemsOf(schema.minItems - 1).map((value) => here(value, ['minItems'])));
        if (schema.maxItems !== undefined) kinds.push(itemsOf(schema.maxItems + 1).map((value) => here(value, ['maxItems'])));
        // One item beyond its rule among valid ones, at a small index or the last one allowed.
        const pending = `${path}[#]`;
        const lastIndex: number = (schema.maxItems ?? 4) - 1;
        for (const kind of this.violationKinds(schema.items, pending, name)) {
          kinds.push(
            fc
              .oneof(
                { weight: 4, arbitrary: fc.integer({ min: 0, max: Math.min(3, lastIndex) }) },
                { weight: 1, arbitrary: fc.constant(lastIndex) },
              )
              .chain((index) => fc.tuple(fc.constant(index), itemsOf(Math.max(index + 1, schema.minItems ?? 0)), kind))
              .map(([index, items, violation]) => {
                const value = [...items];
                value[index] = violation.value;
                const placed = (field: string) => field.split(pending).join(`${path}[${index}]`);
                return { ...violation, value, field: placed(violation.field), names: violation.names.map(placed) };
              }),
          );
        }
        break;
      }
      case 'string': {
        const invalid = textValues('body', name, schema, this.known).invalid;
        if (invalid) kinds.push(invalid.map(({ text, rules }) => here(text, rules)));
        break;
      }
    }
    return kinds;
  }
}

/** A body field as a label: indexes and unknown names left out (`users[].programme_slugs[]`, `users[].*`). */
export function fieldLabel(violation: Pick<BodyViolation, 'field' | 'rules'>): string {
  const field = violation.field.replace(/\[\d+\]/g, '[]');
  return violation.rules.includes('additionalProperties') ? field.replace(/[^.]+$/, '*') : field;
}

// ---------------------------------------------------------------------------------------------
// Requests

/** What an answer must be: its status, and what its `error` must mention (one of them), or which methods `Allow` lists. */
export interface Outcome {
  status: number;
  mentions?: string[];
  allow?: string[];
}

export type Expectation =
  /** The contract gives the answer whatever the server's state. */
  | { kind: 'answer'; outcomes: Outcome[] }
  /** Every value within its rules and a key of the right scope: the oracle judges it against the server's state. */
  | { kind: 'valid'; query: Record<string, string>; headers: Record<string, string>; body?: unknown };

export type RequestClass = 'valid' | 'one value beyond its rule' | 'refused key' | 'method not allowed' | 'transport';

export interface GeneratedRequest {
  requestClass: RequestClass;
  /** What the request tries, to group answers in the report: `query offset: type`, `body users[].email: maxLength`. */
  label: string;
  /** For a value beyond its rule: which input (`query offset`, `body users[].email`) and the rules it breaks. */
  broken?: { input: string; rules: string[] };
  operation: ContractOperation;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  expect: Expectation;
}

/** The keys of the fixture: working ones with their scopes, and refused ones (revoked, expired) by name. */
export interface TestKeys {
  working: { token: string; scopes: string[] }[];
  refused: { token: string; name: string }[];
}

type WeightedCase = { weight: number; arbitrary: fc.Arbitrary<GeneratedRequest> };

/** The fields of a body schema, items of arrays included (`users`, `users[]`, `users[].email`…). */
function fieldCount(node: Schema): number {
  const schema = deref(node);
  if (schema.oneOf) return schema.oneOf.reduce((sum: number, branch: Schema) => sum + fieldCount(branch), 0);
  if (schema.type === 'array') return 1 + fieldCount(schema.items);
  if (schema.type === 'object')
    return Object.values<Schema>(schema.properties ?? {}).reduce((sum, property) => sum + fieldCount(property), 0);
  return 1;
}

interface RequestParts {
  query: Record<string, string>;
  headers: Record<string, string>;
  pathValues: Record<string, string>;
  body?: unknown;
}

const mention = (name: string) => `« ${name} »`;

function urlOf(operation: ContractOperation, parts: Pick<RequestParts, 'query' | 'pathValues'>): string {
  const path = operation.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => encodeURIComponent(parts.pathValues[name]!));
  const search = new URLSearchParams(parts.query).toString();
  return `${apiPrefix}${path}${search ? `?${search}` : ''}`;
}

/** Every request class, for every operation of the document, as one arbitrary. */
export function generatedRequests(known: KnownValues, keys: TestKeys): fc.Arbitrary<GeneratedRequest> {
  const bodies = new BodyValues(known);
  const fixtureBodies = new BodyValues(known, { fixtureValuesOnly: true });
  const valuesOf = new Map<ParameterSlot, TextValues>();
  const values = (slot: ParameterSlot) => {
    const found = valuesOf.get(slot) ?? textValues(slot.location, slot.name, slot.schema, known);
    valuesOf.set(slot, found);
    return found;
  };
  const keysWithScopes = (operation: ContractOperation) =>
    keys.working.filter((key) => operation.requiredScopes.every((scope) => key.scopes.includes(scope))).map((key) => key.token);

  /** Valid parts: each optional parameter present or not, within its rules; the body valid. */
  const validParts = (operation: ContractOperation): fc.Arbitrary<RequestParts> => {
    const recordOf = (location: ParameterSlot['location']) => {
      const slots = operation.parameters.filter((slot) => slot.location === location);
      return fc.record(Object.fromEntries(slots.map((slot) => [slot.name, values(slot).valid])), {
        requiredKeys: slots.filter((slot) => slot.required).map((slot) => slot.name),
      }) as fc.Arbitrary<Record<string, string>>;
    };
    return fc
      .record({
        query: recordOf('query'),
        headers: fc.option(recordOf('header'), { nil: {}, freq: 2 }),
        pathValues: recordOf('path'),
        body: operation.body
          ? fc.oneof(bodies.valid(operation.body.schema), fixtureBodies.valid(operation.body.schema))
          : fc.constant(undefined),
        sameLearner: fc.boolean(),
      })
      .map(({ sameLearner, ...parts }) => {
        // Both learner identifiers usually name the same learner, or nearly every such answer is a 404.
        const learner = known.learners.find((candidate) => candidate.email === parts.query.email);
        if (!sameLearner || !learner || parts.query.user_id === undefined) return parts;
        return { ...parts, query: { ...parts.query, user_id: learner.userId } };
      });
  };

  const request = (
    requestClass: RequestClass,
    label: string,
    operation: ContractOperation,
    parts: RequestParts,
    token: string | null,
    expect: Expectation,
  ): GeneratedRequest => {
    const headers: Record<string, string> = { ...parts.headers };
    if (token !== null) headers.authorization = token;
    let payload: string | undefined;
    if (parts.body !== undefined) {
      payload = JSON.stringify(parts.body);
      headers['content-type'] = 'application/json';
    }
    return { requestClass, label, operation, method: operation.method, url: urlOf(operation, parts), headers, payload, expect };
  };
  const bearer = (token: string) => `Bearer ${token}`;

  const validRequest = (operation: ContractOperation) =>
    fc.tuple(validParts(operation), fc.constantFrom(...keysWithScopes(operation))).map(([parts, token]) =>
      request('valid', `${operation.method} ${operation.path}`, operation, parts, bearer(token), {
        kind: 'valid',
        query: parts.query,
        headers: parts.headers,
        body: parts.body,
      }),
    );

  /**
   * One parameter, header, path segment or body field beyond its rule; everything else valid.
   * Each input weighs the same: a parameter one, the body as many as its fields.
   */
  const oneInvalidValue = (operation: ContractOperation): WeightedCase[] => {
    const token = fc.constantFrom(...keysWithScopes(operation));
    const parameterCases = operation.parameters.flatMap((slot) => {
      const invalid = values(slot).invalid;
      if (!invalid) return [];
      const arbitrary = fc.tuple(validParts(operation), invalid, token).map(([parts, { text, rules }, chosenToken]) => {
        const changed: RequestParts = {
          ...parts,
          query: slot.location === 'query' ? { ...parts.query, [slot.name]: text } : parts.query,
          headers: slot.location === 'header' ? { ...parts.headers, [slot.name]: text } : parts.headers,
          pathValues: slot.location === 'path' ? { ...parts.pathValues, [slot.name]: text } : parts.pathValues,
        };
        // A path segment beyond its length is refused by the router, before any validation: 414
        // (the parameter's description: "Au plus 100 caractères (au-delà : 414)").
        const outcome: Outcome =
          slot.location === 'path' && rules.includes('maxLength') ? { status: 414 } : { status: 400, mentions: [mention(slot.name)] };
        const input = `${slot.location} ${slot.name}`;
        return {
          ...request('one value beyond its rule', `${input}: ${rules.join('+')}`, operation, changed, bearer(chosenToken), {
            kind: 'answer',
            outcomes: [outcome],
          }),
          broken: { input, rules },
        };
      });
      return [{ weight: 1, arbitrary }];
    });
    const body = operation.body;
    const bodyCases = body
      ? [
          {
            weight: fieldCount(body.schema),
            arbitrary: fc.tuple(validParts(operation), bodies.violations(body.schema), token).map(([parts, violation, chosenToken]) => {
              const input = `body ${fieldLabel(violation)}`;
              return {
                ...request(
                  'one value beyond its rule',
                  `${input}: ${violation.rules.join('+')}`,
                  operation,
                  { ...parts, body: violation.value },
                  bearer(chosenToken),
                  { kind: 'answer', outcomes: [{ status: 400, mentions: violation.names.map(mention) }] },
                ),
                broken: { input, rules: violation.rules },
              };
            }),
          },
        ]
      : [];
    return [...parameterCases, ...bodyCases];
  };

  /**
   * Keys that do not open the API (401) or lack the operation's scope (403), on valid requests and
   * on requests with a value beyond its rule alike: the key is looked at before anything else.
   */
  const refusedKey = (operation: ContractOperation) => {
    const anyRequest = fc.oneof(validRequest(operation), ...oneInvalidValue(operation).map((weighted) => weighted.arbitrary));
    const withKey = (generated: GeneratedRequest, authorization: string | null, label: string, status: number): GeneratedRequest => {
      const { authorization: _working, ...headers } = generated.headers;
      // A path the router cannot take (a segment beyond its length) is refused before any route,
      // so before the key: 414 is as right as the key's refusal there.
      const unroutable = generated.expect.kind === 'answer' && generated.expect.outcomes.some((outcome) => outcome.status === 414);
      return {
        ...generated,
        requestClass: 'refused key',
        broken: undefined,
        label,
        headers: authorization === null ? headers : { ...headers, authorization },
        expect: { kind: 'answer', outcomes: [{ status }, ...(unroutable ? [{ status: 414 }] : [])] },
      };
    };
    const unauthenticated = fc.oneof(
      fc.constantFrom<{ authorization: string | null; name: string }>(
        { authorization: null, name: 'no key' },
        { authorization: 'Basic YWxhZGRpbjpzZXNhbWU=', name: 'malformed key' },
        { authorization: 'Bearer', name: 'malformed key' },
        { authorization: 'Bearer sk_test_abc', name: 'malformed key' },
        ...keys.refused.map((key) => ({ authorization: bearer(key.token), name: key.name })),
      ),
      fc.stringMatching(/^[A-Za-z0-9_-]{43}$/).map((random) => ({ authorization: bearer(`sk_live_${random}`), name: 'unknown key' })),
    );
    const lackingScope = keys.working.filter((key) => !operation.requiredScopes.every((scope) => key.scopes.includes(scope)));
    return fc.oneof(
      fc.tuple(anyRequest, unauthenticated).map(([generated, { authorization, name }]) => withKey(generated, authorization, name, 401)),
      ...(lackingScope.length > 0
        ? [
            fc
              .tuple(anyRequest, fc.constantFrom(...lackingScope.map((key) => bearer(key.token))))
              .map(([generated, authorization]) => withKey(generated, authorization, 'key without the scope', 403)),
          ]
        : []),
    );
  };

  /**
   * Every method Node's HTTP parser knows that a path does not declare: 405 with `Allow` listing
   * the declared ones (the contract: "Toute autre méthode sur un chemin connu … 405"), whatever
   * body comes with it (Fastify reads a body before it finds that no route takes it: `QUERY`
   * without Content-Type must still be a 405).
   */
  const methodNotAllowed = (operation: ContractOperation) => {
    const allow = declaredMethods(operation.path);
    const others = METHODS.filter((method) => !allow.includes(method));
    return fc
      .tuple(validParts(operation), fc.constantFrom(...others), fc.constantFrom(...keys.working.map((key) => key.token)))
      .map(([parts, method, token]) => ({
        ...request('method not allowed', method, operation, { ...parts, body: undefined }, bearer(token), {
          kind: 'answer',
          outcomes: [{ status: 405, allow }],
        }),
        method,
      }));
  };

  /** Bodies missing, malformed, of another media type, beyond the size limit or exactly at it; URLs at and beyond their limit. */
  const transport = (operation: ContractOperation): WeightedCase[] => {
    const token = fc.constantFrom(...keysWithScopes(operation)).map(bearer);
    const withBody = (label: string, payload: string | undefined, contentType: string | undefined, outcomes: Outcome[]) =>
      fc.tuple(validParts(operation), token).map(([parts, chosenToken]) => {
        const generated = request('transport', label, operation, { ...parts, body: undefined }, chosenToken, { kind: 'answer', outcomes });
        if (contentType !== undefined) generated.headers['content-type'] = contentType;
        return { ...generated, payload };
      });
    const cases: fc.Arbitrary<GeneratedRequest>[] = [];
    const body = operation.body;
    if (body) {
      const refusedBody = [{ status: 400, mentions: ['Corps de la requête'] }];
      cases.push(
        fc
          .constantFrom<string | undefined>(undefined, 'application/json')
          .chain((type) => withBody('no body', undefined, type, refusedBody)),
        withBody('empty JSON body', '', 'application/json', refusedBody),
        fc
          .constantFrom('null', '{', '{"email":', "{'email': 'a@b.fr'}", '[]', '"texte"', '42', 'true')
          .chain((text) => withBody(`body ${text}`, text, 'application/json', refusedBody)),
      );
      // Another media type than the ones the operation reads: 415, whatever the body.
      const otherTypes = [
        'text/plain',
        'application/xml',
        'text/csv',
        'application/pdf',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/octet-stream',
        'application/jsonx',
        'text/json',
        'application/vnd.api+json',
      ].filter((type) => !body.mediaTypes.includes(type.split(';')[0]!.trim()));
      cases.push(
        fc
          .tuple(fc.constantFrom(...otherTypes), bodies.valid(body.schema))
          .chain(([type, value]) => withBody(`content type ${type}`, JSON.stringify(value), type, [{ status: 415 }])),
      );
      // A valid body padded with JSON whitespace to exactly the limit (a valid request), or beyond it (413).
      cases.push(
        fc
          .tuple(validParts(operation), token, fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 1, max: bodyLimitBytes })))
          .map(([parts, chosenToken, beyond]) => {
            const text = JSON.stringify(parts.body);
            const payload = text + ' '.repeat(bodyLimitBytes - Buffer.byteLength(text) + beyond);
            const expect: Expectation =
              beyond === 0
                ? { kind: 'valid', query: parts.query, headers: parts.headers, body: parts.body }
                : { kind: 'answer', outcomes: [{ status: 413 }] };
            return {
              ...request(
                'transport',
                beyond === 0 ? 'body at the size limit' : 'body beyond the size limit',
                operation,
                parts,
                chosenToken,
                expect,
              ),
              payload,
            };
          }),
      );
    }
    // A URL padded with an unknown query parameter (ignored) to exactly the limit (valid), or beyond it (414).
    cases.push(
      fc
        .tuple(validParts(operation), token, fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 1, max: 4000 })))
        .map(([parts, chosenToken, beyond]) => {
          const padding = 'remplissage';
          const bare = urlOf(operation, { ...parts, query: { ...parts.query, [padding]: '' } });
          const query = { ...parts.query, [padding]: 'x'.repeat(urlLimitCharacters - bare.length + beyond) };
          const expect: Expectation =
            beyond === 0
              ? { kind: 'valid', query: parts.query, headers: parts.headers, body: parts.body }
              : { kind: 'answer', outcomes: [{ status: 414 }] };
          return request(
            'transport',
            beyond === 0 ? 'URL at the length limit' : 'URL beyond the length limit',
            operation,
            { ...parts, query },
            chosenToken,
            expect,
          );
        }),
    );
    return cases.map((arbitrary) => ({ weight: 1, arbitrary }));
  };

  // The operation that takes a body (the only one that writes) is where most can go wrong: it weighs more.
  const weightOf = (operation: ContractOperation) => (operation.body ? 4 : 1);
  const each = (build: (operation: ContractOperation) => fc.Arbitrary<GeneratedRequest>) =>
    fc.oneof(...contractOperations.map((operation) => ({ weight: weightOf(operation), arbitrary: build(operation) })));
  const eachCase = (build: (operation: ContractOperation) => WeightedCase[]) =>
    fc.oneof(
      ...contractOperations.flatMap((operation) =>
        build(operation).map(({ weight, arbitrary }) => ({ weight: weight * weightOf(operation), arbitrary })),
      ),
    );
  return fc.oneof(
    { weight: 40, arbitrary: each(validRequest) },
    { weight: 35, arbitrary: eachCase(oneInvalidValue) },
    { weight: 8, arbitrary: each(refusedKey) },
    { weight: 7, arbitrary: each(methodNotAllowed) },
    { weight: 10, arbitrary: eachCase(transport) },
  );
}
