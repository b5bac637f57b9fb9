import { createServer, type Socket, connect as tcpConnect } from 'node:net';

/**
 * A TCP proxy between a server under test and PostgreSQL, that can cut the network the way a
 * partition does: nothing is closed, nothing arrives. Each client connection gets its own upstream
 * connection while forwarding; bytes go through as they come (no back-pressure: test volumes).
 */
export interface TcpProxy {
  readonly port: number;
  /**
   * Stops forwarding without closing anything: what the open connections send is dropped, and new
   * connections are accepted but never reach PostgreSQL. Those connections stay dead for good.
   */
  blackHole(): void;
  /** Forwards again, for connections opened from now on. */
  restore(): void;
  /** Resets (RST) every connection to the clients, as a crashed peer or a middlebox would. */
  resetClients(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  dead: boolean;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  // Every socket, closed at the end: a dead pair's upstream outlives its client (PostgreSQL is never told).
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  let forwarding = true;

  // Half-open allowed: a connection's end (FIN) goes through only while forwarding, so a client
  // that closes a dead connection waits as it would across a partition.
  const server = createServer({ allowHalfOpen: true }, (client) => {
    const pair: Pair = { client, dead: !forwarding };
    pairs.add(pair);
    track(client);
    client.on('error', () => undefined);
    client.on('close', () => pairs.delete(pair));
    if (pair.dead) {
      // Read and drop: the client's writes succeed, its reads wait forever.
      client.resume();
      return;
    }
    const upstream = tcpConnect({ ...target, allowHalfOpen: true });
    track(upstream);
    upstream.on('error', () => undefined);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('data', (chunk) => {
        if (!pair.dead) to.write(chunk);
      });
      from.on('end', () => {
        if (!pair.dead) to.end();
      });
      from.on('close', () => {
        if (!pair.dead) to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    port,
    blackHole() {
      forwarding = false;
      for (const pair of pairs) pair.dead = true;
    },
    restore() {
      forwarding = true;
    },
    resetClients() {
      for (const pair of pairs) pair.client.resetAndDestroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
