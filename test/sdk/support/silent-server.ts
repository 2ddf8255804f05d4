import net from 'node:net';

/** A server that accepts every connection and never answers: to the SDK, a hung authority. */
export class SilentServer {
  url = '';
  /** Connections accepted so far. */
  connections = 0;
  private readonly sockets = new Set<net.Socket>();
  private readonly server = net.createServer((socket) => {
    this.connections++;
    this.sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => this.sockets.delete(socket));
  });

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => this.server.once('listening', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
