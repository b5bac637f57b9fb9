import type { ColumnType } from '../../../db/resources/definition';
import type { RowBatch } from '../row-batch';
import { characters, columnLetters, escapeXmlText } from './cell-values';
import type { SheetColumn } from './sheet-rows';

// SpreadsheetML of the rows

const spreadsheetNamespace = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const relationshipsNamespace = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const packageRelationshipsNamespace = 'http://schemas.openxmlformats.org/package/2006/relationships';
const xmlDeclaration = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

/**
 * Indexes of the cell formats of styles.xml (`s` of a cell). Dates read as the API writes them (ISO
 * order, Paris wall-clock time), whatever the spreadsheet's language: a French user still sorts,
 * filters and computes on real dates. The header is bold, in the whole font (a font without size
 * or name renders oddly in some spreadsheets).
 */
export const cellFormat = { date: 1, dateTime: 2, header: 3 } as const;

export const stylesXml = `${xmlDeclaration}<styleSheet xmlns="${spreadsheetNamespace}">\
<numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/><numFmt numFmtId="165" formatCode="yyyy-mm-dd hh:mm"/></numFmts>\
<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font><font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>\
<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>\
<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>\
<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>\
<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>\
<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>\
<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>`;

export const packageRelationshipsXml = `${xmlDeclaration}<Relationships xmlns="${packageRelationshipsNamespace}">\
<Relationship Id="rId1" Type="${relationshipsNamespace}/officeDocument" Target="xl/workbook.xml"/></Relationships>`;

export function contentTypesXml(sheets: number): string {
  const worksheets = Array.from(
    { length: sheets },
    (_, index) =>
      `<Override PartName="/xl/worksheets/sheet${index + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`,
  ).join('');
  return `${xmlDeclaration}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">\
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>\
<Default Extension="xml" ContentType="application/xml"/>\
<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>\
<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>${worksheets}</Types>`;
}

export function workbookXml(sheetNames: readonly string[]): string {
  const sheets = sheetNames
    .map((name, index) => `<sheet name="${escapeXmlText(name)}" sheetId="${index + 1}" r:id="rId${index + 1}"/>`)
    .join('');
  return `${xmlDeclaration}<workbook xmlns="${spreadsheetNamespace}" xmlns:r="${relationshipsNamespace}"><bookViews><workbookView/></bookViews><sheets>${sheets}</sheets></workbook>`;
}

export function workbookRelationshipsXml(sheets: number): string {
  const worksheets = Array.from(
    { length: sheets },
    (_, index) =>
      `<Relationship Id="rId${index + 1}" Type="${relationshipsNamespace}/worksheet" Target="worksheets/sheet${index + 1}.xml"/>`,
  ).join('');
  return `${xmlDeclaration}<Relationships xmlns="${packageRelationshipsNamespace}">${worksheets}\
<Relationship Id="rId${sheets + 1}" Type="${relationshipsNamespace}/styles" Target="styles.xml"/></Relationships>`;
}

const displayedLength: Partial<Record<ColumnType, number>> = { date: 10, dateTime: 16 };
const widestColumn = 60;
const narrowestColumn = 10;
/** Rows whose values size the columns: the widths go at the top of a sheet, before any row. */
export const measuredRows = 1000;

/** Wide enough for the header and the values of the first rows, up to 60 characters (a comment may be longer). */
export function columnWidths(columns: readonly SheetColumn[], firstBatches: readonly RowBatch[]): number[] {
  return columns.map((column, field) => {
    let widest = column.name.length;
    let rows = 0;
    for (const batch of firstBatches) {
      for (let row = 0; row < batch.rows && rows < measuredRows; row++, rows++) {
        const start = batch.starts[row * columns.length + field]!;
        if (start < 0) continue;
        const end = batch.ends[row * columns.length + field]!;
        widest = Math.max(widest, displayedLength[column.type] ?? characters(batch.bytes, start, end));
      }
    }
    // Two characters of margin for the bold header and the button of a filter a user adds; at least
    // 10, a date's width.
    return Math.max(Math.min(widest, widestColumn) + 2, narrowestColumn);
  });
}

/**
 * The start of every sheet of a workbook, up to its first row of data: the header row frozen at
 * the top, the columns' widths (and the date formats of the date columns, for the cells a user
 * adds), then the bold header.
 */
export function sheetStartXml(columns: readonly SheetColumn[], widths: readonly number[]): string {
  const cols = columns
    .map((column, index) => {
      const style = column.type === 'date' || column.type === 'dateTime' ? ` style="${cellFormat[column.type]}"` : '';
      return `<col min="${index + 1}" max="${index + 1}" width="${widths[index]}"${style} customWidth="1"/>`;
    })
    .join('');
  const header = columns
    .map(
      (column, index) =>
        `<c r="${columnLetters(index)}1" s="${cellFormat.header}" t="inlineStr"><is><t>${escapeXmlText(column.name)}</t></is></c>`,
    )
    .join('');
  return `${xmlDeclaration}<worksheet xmlns="${spreadsheetNamespace}" xmlns:r="${relationshipsNamespace}">\
<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>\
<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews><sheetFormatPr defaultRowHeight="15"/>\
<cols>${cols}</cols><sheetData><row r="1">${header}</row>`;
}

export const sheetEndXml = '</sheetData></worksheet>';
