import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts listening on a free loopback port; answers the server's base URL. */
export async function listenOnLoopback(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes the server, dropping kept-alive connections so the close does not wait on clients. */
export async function closeNow(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
