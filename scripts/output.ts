import Table from 'cli-table3';
import { formatParisDate, formatParisDateTime } from '../db/paris-time';

/*
 * How the operator commands speak to a person (without --json): aligned tables, `label : value`
 * sheets, French numbers, and Paris dates in the API's own formats (`AAAA-MM-JJ`, `AAAA-MM-JJ HH:MM`),
 * the format `--expires` takes.
 */

const none = '—';

export type Cell = string | number | null | undefined;

/** An absent value reads as a dash (an empty string stays blank); numbers get French digit grouping (`1 600 000`). */
function cellText(value: Cell): string {
  if (value === null || value === undefined) return none;
  return typeof value === 'number' ? value.toLocaleString('fr-FR') : value;
}

// No frame, two spaces between columns: the shape of `docker ps` or `kubectl get`, easy to read
// and to grep.
const borderless = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
};

export interface Column<Row> {
  header: string;
  value(row: Row): Cell;
  /** Counts and durations line up on the right. */
  align?: 'left' | 'right';
}

/** A table with a header line; `empty` is the sentence printed instead when there is no row. */
export function table<Row>(rows: readonly Row[], columns: readonly Column<Row>[], empty: string): string {
  if (rows.length === 0) return empty;
  const rendered = new Table({
    head: columns.map((column) => column.header),
    chars: borderless,
    colAligns: columns.map((column) => column.align ?? 'left'),
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
  });
  for (const row of rows) rendered.push(columns.map((column) => cellText(column.value(row))));
  return rendered
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/** `label : value` lines, the labels padded to one width: one record. */
export function sheet(pairs: readonly [label: string, value: Cell][]): string {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `  ${label.padEnd(width)} : ${cellText(value)}`).join('\n');
}

/** `AAAA-MM-JJ` in Paris. */
export function operatorDate(instant: Date | null): string | null {
  return instant === null ? null : formatParisDate(instant);
}

/** `AAAA-MM-JJ HH:MM` in Paris. */
export function operatorDateTime(instant: Date | null): string | null {
  return instant === null ? null : formatParisDateTime(instant);
}

/** `12 lignes`, `1 ligne`: a count and its noun, in French (the plural adds an s unless given). */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n.toLocaleString('fr-FR')} ${n >= 2 ? plural : singular}`;
}

/** API scopes as an operator reads them. */
export function scopesText(scopes: readonly string[]): string {
  return scopes.map((scope) => (scope === 'write' ? 'écriture' : scope === 'read' ? 'lecture' : scope)).join(', ');
}
