import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

export interface MultipartUpload {
  fields: Record<string, string>;
  file: { field: string; path: string };
  /** Called as the file's bytes go out. */
  onProgress(sent: number, total: number): void;
}

/**
 * A multipart/form-data body streamed from disk, with its exact length: the server sees a
 * Content-Length (and can refuse an oversized upload at once), and the file is never in memory.
 */
export async function multipartBody(upload: MultipartUpload): Promise<{ contentType: string; length: number; body: ReadableStream<Uint8Array> }> {
  const boundary = `latchkey-${randomBytes(12).toString('hex')}`;
  const quote = (value: string) => value.replace(/["\r\n]/g, (c) => encodeURIComponent(c));
  const parts = Object.entries(upload.fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`);
  const head = Buffer.from(
    `${parts.join('')}--${boundary}\r\nContent-Disposition: form-data; name="${quote(upload.file.field)}"; filename="${quote(path.basename(upload.file.path))}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const { size } = await fs.stat(upload.file.path);
  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield head;
    let sent = 0;
    upload.onProgress(0, size);
    for await (const chunk of createReadStream(upload.file.path, { highWaterMark: 1024 * 1024 })) {
      yield chunk as Buffer;
      sent += (chunk as Buffer).length;
      upload.onProgress(sent, size);
    }
    yield tail;
  }
  const iterator = chunks();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
  return { contentType: `multipart/form-data; boundary=${boundary}`, length: head.length + size + tail.length, body };
}
