import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOpenapiDocument } from '../src/openapi-document';
import { projectRoot } from './support/server-process';

/**
 * The drift check: every field of every resource table of the spec is in openapi.yaml with the same
 * name, order and type, and openapi.yaml names nothing the spec and docs/decisions.md do not.
 */
const specCopy = path.join(projectRoot, 'spec', 'partner-api.md');
const sharedSpec = path.join(projectRoot, '..', 'shared', 'spec', 'partner-api.md');
const specText = readFileSync(specCopy, 'utf8');
const document = loadOpenapiDocument();

type Kind = 'integer' | 'number' | 'string' | 'date' | 'date-time' | 'oui-non';

/** The field tables of the spec: resource -> [field, meaning][] in order. */
function specFields(): Map<string, [string, string][]> {
  const tables = new Map<string, [string, string][]>();
  for (const match of specText.matchAll(/### Resource `([a-z-]+)`[^\n]*\n\n((?:\|[^\n]*\n)+)/g)) {
    const rows = match[2]!
      .trim()
      .split('\n')
      .slice(2)
      .map((line) => line.split('|').map((cell) => cell.trim()));
    tables.set(
      match[1]!,
      rows.flatMap(([, names, meaning]) => names!.split(',').map((name): [string, string] => [name.trim(), meaning!])),
    );
  }
  return tables;
}

/** The spec's typing rules: yes/no as Oui/Non, dates and date-times, integers for counts, minutes, scores, percentages, ratings. */
function specKind(resource: string, field: string, meaning: string): Kind {
  if (resource === 'summary') return 'integer';
  if (/\(Oui\/Non\)/.test(meaning)) return 'oui-non';
  if (/date-time/.test(meaning)) return 'date-time';
  if (/\bdate\b/i.test(meaning)) return 'date';
  if (field === 'heures') return 'number';
  if (
    /\/5|\/10|\/100|\(%\)|[Dd]uration|[Tt]ime\b|Part spent|Logins|Programmes |Evaluations|[Ss]essions |PIFs|Certificates|Lessons|[Ss]core|[Nn]umber|Total/.test(
      meaning,
    )
  )
    return 'integer';
  return 'string';
}

function deref(node: any): any {
  while (node?.$ref)
    node = node.$ref
      .slice(2)
      .split('/')
      .reduce((at: any, part: string) => at[part], document);
  return node;
}

function openapiKind(schema: any): Kind {
  const types = ([] as string[]).concat(schema.type ?? []).filter((type) => type !== 'null');
  if (schema.enum && schema.enum.filter((v: unknown) => v !== null).join() === 'Oui,Non') return 'oui-non';
  if (schema.format === 'date') return 'date';
  if (schema.pattern === '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}$') return 'date-time';
  return (types[0] ?? 'string') as Kind;
}

function rowSchema(resource: string): any {
  const envelope = deref(deref(document.paths[`/${resource}`].get.responses['200']).content['application/json'].schema);
  const data = deref(envelope.properties?.data ?? envelope.allOf?.map(deref).find((part: any) => part.properties?.data)?.properties.data);
  return deref(data.items ?? data);
}

function flatten(schema: any, prefix = ''): [string, any][] {
  return Object.entries<any>(deref(schema).properties ?? {}).flatMap(([name, inner]) => {
    const resolved = deref(inner);
    return resolved.type === 'object' ? flatten(resolved, `${prefix}${name}.`) : [[`${prefix}${name}`, resolved] as [string, any]];
  });
}

describe('openapi.yaml against the spec', () => {
  it.runIf(existsSync(sharedSpec))('works from an up-to-date copy of the shared spec', () => {
    expect(readFileSync(sharedSpec, 'utf8') === specText).toBe(true);
  });

  it('has every resource of the spec, field for field, in order, with the spec’s types', () => {
    const tables = specFields();
    expect([...tables.keys()]).toHaveLength(13);
    for (const [resource, fields] of tables) {
      const properties = flatten(rowSchema(resource));
      const expected =
        resource === 'summary'
          ? fields.flatMap(([name]) =>
              name.startsWith('licences.')
                ? ['total', 'disponibles', 'utilisees'].map((part) => `licences.${name.split('.')[1]}.${part}`)
                : [name],
            )
          : fields.map(([name]) => name);
      expect(
        properties.map(([name]) => name),
        resource,
      ).toEqual(expected);
      if (resource === 'summary') continue;
      for (const [name, meaning] of fields) {
        const schema = properties.find(([property]) => property === name)![1];
        expect(`${resource}.${name}: ${openapiKind(schema)}`).toBe(`${resource}.${name}: ${specKind(resource, name, meaning)}`);
      }
    }
  });

  it('names in the envelopes, enrolment records and errors only what the spec and docs/decisions.md name', () => {
    const schemas = document.components.schemas;
    // A schema's properties, with those of the schemas it combines (`allOf`).
    const names = (schema: any): string[] => {
      const resolved = deref(schema);
      return [...(resolved.allOf ?? []).flatMap(names), ...Object.keys(resolved.properties ?? {})];
    };
    expect(names(schemas.Meta)).toEqual(['org_name', 'year', 'generated_at', 'truncated', 'updated_since', 'learner', 'programme']);
    expect(names(deref(schemas.Meta).properties.learner)).toEqual(['user_id', 'email']);
    expect(names(schemas.Pagination)).toEqual(['limit', 'offset', 'count', 'total', 'has_more']);
    expect(names(schemas.Member)).toEqual(['id', 'user_id', 'email', 'nom', 'statut', 'licence_type', 'programmes', 'inscrit_le']);
    expect(names(schemas.EnrolmentResponse)).toEqual(['member', 'status']);
    expect(names(schemas.BulkEnrolmentResponse)).toEqual(['summary', 'results']);
    expect(names(schemas.Error)).toEqual(['error', 'code', 'param', 'doc_url']);
    expect(names(schemas.UnknownResourceError)).toEqual(['error', 'code', 'param', 'doc_url', 'available']);
    expect(names(schemas.RateLimitError)).toEqual(['error', 'code', 'param', 'doc_url', 'retry_after']);
  });
});
