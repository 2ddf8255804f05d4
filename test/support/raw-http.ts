import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (after its answer, or without one). */
  closed: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One HTTP/1.1 exchange over a raw socket, for what fetch cannot do: send a request's bytes in
 * pieces with pauses between them (`[bytes, pause ms]`), stop sending, drop the connection
 * (`null`), or send malformed heads.
 * Resolves with the first answer once the server has sent it whole, or when it closes.
 */
export function rawExchange(url: string, pieces: (string | Buffer | number | null)[]): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      const answer = parse(received, closed);
      if (!answer) return;
      done = true;
      socket.destroy();
      resolve(answer);
    };
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      finish(false);
    });
    socket.on('close', () => {
      finish(true);
      if (!done) {
        done = true;
        resolve({ status: 0, headers: {}, body: '', closed: true });
      }
    });
    socket.on('error', (err) => {
      // A reset after the answer arrived is fine; before it, the close handler reports status 0.
      if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET' && (err as NodeJS.ErrnoException).code !== 'EPIPE') reject(err);
    });
    socket.once('connect', async () => {
      for (const piece of pieces) {
        if (done || socket.destroyed) return;
        if (piece === null) {
          // The client drops the connection here (status 0 unless an answer came first).
          socket.destroy();
          done = true;
          resolve({ status: 0, headers: {}, body: '', closed: true });
        } else if (typeof piece === 'number') await sleep(piece);
        else socket.write(piece);
      }
    });
  });
}

/** The answer in `bytes` once its head and Content-Length body are all there (or the connection closed). */
function parse(bytes: Buffer, closed: boolean): RawAnswer | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = bytes.subarray(end + 4);
  if (body.length < length && !closed) return null;
  return { status: Number(statusLine!.split(' ')[1]), headers, body: body.subarray(0, length).toString('utf8'), closed };
}

/** A multipart/form-data body with text fields and one file part, split into its head, the file, and its tail. */
export function multipartParts(fields: Record<string, string>, fileField: string, fileName: string, file: Buffer) {
  const boundary = `----latchkey${Math.random().toString(16).slice(2)}`;
  let head = '';
  for (const [name, value] of Object.entries(fields)) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="${fileField}"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: Buffer.byteLength(head) + file.length + Buffer.byteLength(tail),
    head: Buffer.from(head),
    tail: Buffer.from(tail),
  };
}
