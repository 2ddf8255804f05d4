import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { tempDir } from './fake-machine.js';

/**
 * https in front of a local http server, as the authority is deployed: TLS ends here and the bytes
 * go on to `upstream`. Its certificate (for 127.0.0.1, made with openssl for this run) is in
 * `certificateFile`, for a child process to trust through NODE_EXTRA_CA_CERTS.
 */
export class TlsFront {
  url = '';
  readonly certificateFile: string;
  private readonly server: tls.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(upstream: string) {
    const dir = tempDir('latchkey-tls-');
    const key = path.join(dir, 'key.pem');
    this.certificateFile = path.join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        this.certificateFile,
      ],
      { stdio: 'ignore' },
    );
    const { hostname, port } = new URL(upstream);
    this.server = tls.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(this.certificateFile) }, (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      const plain = net.connect(Number(port), hostname);
      socket.pipe(plain).pipe(socket);
      plain.on('error', () => socket.destroy());
      socket.on('error', () => plain.destroy());
    });
  }

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => this.server.once('listening', resolve));
    this.url = `https://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
