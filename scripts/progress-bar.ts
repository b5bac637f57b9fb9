/** A progress bar on stderr (stdout stays for the result): redrawn in place on a terminal. */
export class ProgressBar {
  private readonly started = Date.now();
  private lastLine = '';
  private lastTenth = -1;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {}

  update(done: number, detail = ''): void {
    const ratio = this.total === 0 ? 1 : Math.min(1, done / this.total);
    const width = 30;
    const filled = Math.round(ratio * width);
    const seconds = ((Date.now() - this.started) / 1000).toFixed(0);
    const line = `${this.label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(ratio * 100)).padStart(3)} % ${done}/${this.total}${detail ? ` · ${detail}` : ''} · ${seconds} s`;
    if (this.stream.isTTY) {
      this.stream.write(`\r${line}${' '.repeat(Math.max(0, this.lastLine.length - line.length))}`);
    } else if (Math.floor(ratio * 10) !== this.lastTenth) {
      // Not a terminal (a log file, a pipe): one line per tenth.
      this.stream.write(`${line}\n`);
    }
    this.lastTenth = Math.floor(ratio * 10);
    this.lastLine = line;
  }

  finish(detail = ''): void {
    this.update(this.total, detail);
    if (this.stream.isTTY) this.stream.write('\n');
  }
}
