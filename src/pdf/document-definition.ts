/**
 * The part of pdfmake's document definition this project uses, typed here because pdfmake 0.3
 * ships no typings. Builders return these plain objects; only `src/pdf/render.ts` hands them to
 * pdfmake.
 */
export type Margins = number | [number, number] | [number, number, number, number];
export type Alignment = 'left' | 'center' | 'right' | 'justify';

export interface StyleProperties {
  style?: string | string[];
  font?: string;
  fontSize?: number;
  bold?: boolean;
  italics?: boolean;
  color?: string;
  fillColor?: string;
  alignment?: Alignment;
  margin?: Margins;
  lineHeight?: number;
  noWrap?: boolean;
}

export interface TextNode extends StyleProperties {
  text: string | (string | TextNode)[];
}

export interface StackNode extends StyleProperties {
  stack: Content[];
  unbreakable?: boolean;
}

export interface ColumnsNode extends StyleProperties {
  columns: (Content & { width?: ColumnWidth })[];
  columnGap?: number;
}

export interface CanvasRect {
  type: 'rect';
  x: number;
  y: number;
  w: number;
  h: number;
  color?: string;
  r?: number;
}

export interface CanvasLine {
  type: 'line';
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  lineWidth?: number;
  lineColor?: string;
}

export interface CanvasNode extends StyleProperties {
  canvas: (CanvasRect | CanvasLine)[];
}

export type ColumnWidth = number | '*' | 'auto';

/** What a table cell may add to its content: spans, and pdfmake's `{}` placeholder of a spanned cell. */
export interface CellProperties {
  colSpan?: number;
  rowSpan?: number;
}
export type TableCell = ((TextNode | StackNode | CanvasNode | ColumnsNode) & CellProperties) | Record<string, never>;

export interface TableLayout {
  hLineWidth?(lineIndex: number, node: { table: { body: unknown[][] } }): number;
  vLineWidth?(lineIndex: number, node: { table: { widths: unknown[] } }): number;
  hLineColor?(lineIndex: number, node: { table: { body: unknown[][] } }): string;
  fillColor?(rowIndex: number, node: { table: { body: unknown[][] } }, columnIndex: number): string | null;
  paddingLeft?(columnIndex: number): number;
  paddingRight?(columnIndex: number): number;
  paddingTop?(rowIndex: number): number;
  paddingBottom?(rowIndex: number): number;
}

export interface TableNode extends StyleProperties {
  table: {
    body: TableCell[][];
    widths?: ColumnWidth[];
    /** Rows repeated at the top of every page the table runs onto. */
    headerRows?: number;
    /** Data rows kept on the same page as the header rows. */
    keepWithHeaderRows?: number;
    /** A row never splits across two pages. */
    dontBreakRows?: boolean;
  };
  layout?: TableLayout | 'noBorders' | 'lightHorizontalLines' | 'headerLineOnly';
}

export type Content = string | TextNode | StackNode | ColumnsNode | CanvasNode | TableNode | Content[];

export interface PageSize {
  width: number;
  height: number;
}

export interface DocumentDefinition {
  pageSize: 'A4';
  pageOrientation?: 'portrait' | 'landscape';
  pageMargins: Margins;
  language?: string;
  info?: { title?: string; author?: string; subject?: string; keywords?: string; creator?: string; producer?: string };
  header?(currentPage: number, pageCount: number, pageSize: PageSize): Content | null;
  footer?(currentPage: number, pageCount: number, pageSize: PageSize): Content | null;
  content: Content[];
  styles?: Record<string, StyleProperties>;
  defaultStyle?: StyleProperties;
}
