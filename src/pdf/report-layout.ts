import type { Alignment, ColumnWidth, Content, StyleProperties, TableCell, TableLayout, TextNode } from './document-definition';

/*
 * The activity report's look: its colours, text styles and page, and the tables, headings and
 * grids every section is made of. src/pdf/activity-report.ts builds the sections from them.
 */

export const colours = {
  ink: '#1f2933',
  brand: '#1f3a5f',
  muted: '#5f6b7a',
  rule: '#c5cfdb',
  headerFill: '#e3eaf3',
  zebraFill: '#f5f7fa',
  totalFill: '#eef2f7',
  bar: '#2f6db5',
};

/**
 * Text styles, spread into the nodes rather than named in `styles`: pdfmake resolves a named style
 * for every property of every word, which made a heavy report several times slower.
 */
export const text = {
  title: { fontSize: 22, bold: true, color: colours.brand, margin: [0, 0, 0, 2] },
  subtitle: { fontSize: 11, color: colours.muted, margin: [0, 0, 0, 12] },
  sectionTitle: { fontSize: 12.5, bold: true, color: colours.brand, margin: [0, 0, 0, 2] },
  subsectionTitle: { fontSize: 10, bold: true, color: colours.ink, margin: [0, 2, 0, 1] },
  note: { fontSize: 7.5, italics: true, color: colours.muted, margin: [0, 0, 0, 3] },
  empty: { italics: true, color: colours.muted, margin: [0, 2, 0, 0] },
  tableHeader: { bold: true, color: colours.brand, fontSize: 7 },
  label: { color: colours.muted },
  small: { fontSize: 6.5, color: colours.muted },
} satisfies Record<string, StyleProperties>;

export const pageMargins: [number, number, number, number] = [40, 58, 40, 46];
/** A4 width (595.28 pt) minus the side margins. */
export const contentWidth = 595.28 - pageMargins[0] - pageMargins[2];

export type Cell = string | TableCell;

export interface Column {
  header: string;
  width: ColumnWidth;
  alignment?: Alignment;
}

export interface Heading {
  /** The numbered section title; absent on the second and later tables of a section. */
  title?: string;
  subtitle?: string;
  note?: string;
}

/** Lines between rows, none between columns; the header rows shaded, the data rows striped. */
function dataTableLayout(headerRows: number, hasTotals: boolean): TableLayout {
  return {
    hLineWidth: (line, node) => {
      if (line < headerRows - 1) return 0;
      if (line === headerRows - 1 || line === headerRows) return 0.8;
      if (hasTotals && line === node.table.body.length - 1) return 0.8;
      return line === node.table.body.length ? 0.8 : 0.3;
    },
    hLineColor: (line) => (line <= 2 ? colours.brand : colours.rule),
    vLineWidth: () => 0,
    fillColor: (row, node) => {
      if (row === headerRows - 1) return colours.headerFill;
      if (row < headerRows) return null;
      if (hasTotals && row === node.table.body.length - 1) return colours.totalFill;
      return (row - headerRows) % 2 === 1 ? colours.zebraFill : null;
    },
    paddingLeft: () => 4,
    paddingRight: () => 4,
    paddingTop: () => 2.5,
    paddingBottom: () => 2.5,
  };
}

export function headingStack(heading: Heading): Content[] {
  const lines: Content[] = [];
  if (heading.title) lines.push({ text: heading.title, ...text.sectionTitle });
  if (heading.subtitle) lines.push({ text: heading.subtitle, ...text.subsectionTitle });
  if (heading.note) lines.push({ text: heading.note, ...text.note });
  return lines;
}

function placeholderCells(count: number): TableCell[] {
  return Array.from({ length: count }, () => ({}));
}

/** A cell spanning `span` columns, followed by the placeholders pdfmake expects. */
export function spanning(cell: TableCell, span: number): TableCell[] {
  return [{ ...cell, colSpan: span } as TableCell, ...placeholderCells(span - 1)];
}

function isPlaceholder(cell: TableCell): boolean {
  return Object.keys(cell).length === 0;
}

/** A totals row: one sentence across the table (a total in a narrow column would wrap). */
export function totalsRow(sentence: string, columns: number): TableCell[] {
  return spanning({ text: sentence }, columns);
}

function aligned(cell: Cell, alignment: Alignment | undefined): TableCell {
  if (typeof cell !== 'string') return cell;
  return alignment ? { text: cell, alignment } : { text: cell };
}

/**
 * A titled table whose title and column headers repeat on every page it runs onto, whose rows never
 * split, and whose first row stays with its header: it splits across pages cleanly. No rows: the
 * title and "Aucune donnée" instead of an empty table.
 */
export function dataTable(heading: Heading, columns: Column[], rows: Cell[][], emptyMessage: string, totals?: TableCell[]): Content {
  if (rows.length === 0) return emptyBlock(heading, emptyMessage);
  // The title sits flush with the table's left edge, like the titles of sections that are not tables.
  const titleRow = spanning({ stack: headingStack(heading), margin: [-4, 0, 0, 2] }, columns.length);
  const headerRow: TableCell[] = columns.map((column) => ({
    text: column.header,
    ...text.tableHeader,
    alignment: column.alignment ?? 'left',
  }));
  const body: TableCell[][] = [
    titleRow,
    headerRow,
    ...rows.map((row) => row.map((cell, index) => aligned(cell, columns[index]!.alignment))),
  ];
  if (totals)
    body.push(
      totals.map((cell, index) =>
        isPlaceholder(cell) ? cell : ({ ...aligned(cell, columns[index]!.alignment), bold: true } as TableCell),
      ),
    );
  return {
    table: { headerRows: 2, keepWithHeaderRows: 1, dontBreakRows: true, widths: columns.map((column) => column.width), body },
    layout: dataTableLayout(2, totals !== undefined),
    fontSize: 7.5,
    margin: [0, 0, 0, 14],
  };
}

/** A section or sub-section with nothing to show: its title and "Aucune donnée", no explanatory note. */
export function emptyBlock(heading: Heading, message: string): Content {
  return {
    stack: [...headingStack({ title: heading.title, subtitle: heading.subtitle }), { text: message, ...text.empty }],
    unbreakable: true,
    margin: [0, 0, 0, 12],
  };
}

/** Label / value pairs, two pairs to a line. */
export function keyValueGrid(pairs: [string, string][], labelWidth: number): Content {
  const rows: TableCell[][] = [];
  for (let index = 0; index < pairs.length; index += 2) {
    const row: TableCell[] = [];
    for (const pair of [pairs[index], pairs[index + 1]]) {
      row.push(pair ? { text: pair[0], ...text.label } : { text: '' }, pair ? { text: pair[1], bold: true } : { text: '' });
    }
    rows.push(row);
  }
  const valueWidth = (contentWidth - 2 * labelWidth) / 2 - 16;
  return {
    table: { widths: [labelWidth, valueWidth, labelWidth, valueWidth], body: rows, dontBreakRows: true },
    layout: {
      hLineWidth: (line, node) => (line === 0 || line === node.table.body.length ? 0 : 0.3),
      hLineColor: () => colours.rule,
      vLineWidth: () => 0,
      paddingTop: () => 3,
      paddingBottom: () => 3,
      paddingLeft: () => 4,
      paddingRight: () => 4,
    },
  };
}

export function small(content: string): TextNode {
  return { text: content, ...text.small };
}

/** A lesson with its module and programme beneath, in one cell. */
export function lessonCell(lesson: string, module: string, programme: string | null): TableCell {
  return { stack: [{ text: lesson }, small(programme ? `${module} · ${programme}` : module)] };
}

// ---------------------------------------------------------------------------------------------
// Sections
