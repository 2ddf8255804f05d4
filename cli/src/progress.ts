/** An upload's progress on stderr: a redrawn bar on a terminal, a line every 10% otherwise (logs, CI). */
export function progressBar(stream: NodeJS.WriteStream, label: string): { update(sent: number, total: number): void; done(): void } {
  const WIDTH = 30;
  const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
  let lastStep = -1;
  return {
    update(sent, total) {
      const ratio = total === 0 ? 1 : sent / total;
      const percent = Math.floor(ratio * 100);
      const line = `${label} [${'#'.repeat(Math.round(ratio * WIDTH)).padEnd(WIDTH, '.')}] ${String(percent).padStart(3)}%  ${mb(sent)}/${mb(total)} MB`;
      if (stream.isTTY) {
        stream.write(`\r${line}`);
        return;
      }
      const step = Math.floor(percent / 10);
      if (step !== lastStep) {
        lastStep = step;
        stream.write(`${line}\n`);
      }
    },
    done() {
      if (stream.isTTY) stream.write('\n');
    },
  };
}
