import { createServer } from 'node:net';
import { postgresAnswers, serverUrlFor } from '../../src/local/embedded-postgres';

/** A port free on the loopback right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether a PostgreSQL accepts a connection on this loopback port (within a second). */
export function postgresAnswersOn(port: number): Promise<boolean> {
  return postgresAnswers(serverUrlFor(port));
}
