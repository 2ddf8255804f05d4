/** Human output: aligned columns, `-` for nothing. Scripts use `--json` instead. */

function text(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

export function renderTable(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((row) => row.map(text));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n') + '\n';
}

export function renderRecord(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return (
    Object.entries(record)
      .map(([key, value]) => `${key.padEnd(width)}  ${text(value)}`)
      .join('\n') + '\n'
  );
}

export function renderJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** The last line of a list: how many are shown of how many there are (the API's X-Total-Count). */
export function countLine(shown: number, headers: Headers, noun: string): string {
  return `${shown} of ${headers.get('x-total-count') ?? shown} ${noun}(s)\n`;
}
