import type { FastifyInstance } from 'fastify';
import { apiPrefix, buildApp } from './app';
import { loadConfig } from './config';
import { openServerContext } from './context';

/**
 * Stops accepting connections, lets the requests in flight finish, closes keep-alive connections
 * as they fall idle, and past `deadlineMs` closes whatever is left (a client that stopped reading,
 * an export still going): a stop never outlasts an orchestrator's grace period.
 */
async function closeWithin(app: FastifyInstance, deadlineMs: number): Promise<void> {
  const closed = app.close();
  const reaper = setInterval(() => app.server.closeIdleConnections(), 100);
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([
    closed.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(resolve, deadlineMs, true);
    }),
  ]);
  if (late) {
    app.log.warn({ deadlineMs }, 'arrêt : des connexions étaient encore ouvertes au terme du délai, elles sont fermées');
    app.server.closeAllConnections();
    await closed;
  }
  clearTimeout(timer);
  clearInterval(reaper);
}

/** The lines `make run` prints once the server listens. */
function welcome(base: string, context: Awaited<ReturnType<typeof openServerContext>>): string {
  const lines = ['', `API partenaires prête : ${base}`, `Documentation : ${base}/docs   (document : ${base}/openapi.yaml)`];
  const demo = context.demo;
  if (demo) {
    lines.push(
      `Organisation de démonstration : ${demo.orgName} (${demo.orgId})`,
      `  clé lecture  : ${demo.readKey}`,
      `  clé écriture : ${demo.writeKey}`,
      `Essai : curl -H "Authorization: Bearer ${demo.readKey}" "${base}/summary"`,
    );
  }
  return lines.join('\n') + '\n\n';
}

/** `make run` / `npm start`: settings, the context (database, demo, workers), the app, listen, stop on a signal. */
async function main(): Promise<void> {
  const config = loadConfig();
  const context = await openServerContext(config);
  const app = await buildApp(context);
  context.useLogger(app.log);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const started = Date.now();
    app.log.info(`${signal} reçu : arrêt propre (au plus ${Math.ceil(config.shutdownTimeoutMs / 1000)} s pour les requêtes en cours)`);
    app.startDraining();
    await closeWithin(app, config.shutdownTimeoutMs);
    // The webhook attempts in flight get what is left of the deadline, and at least a second.
    await context.close(Math.max(1_000, config.shutdownTimeoutMs - (Date.now() - started)));
    app.log.info('arrêté');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
  // The port actually bound: PORT=0 asks the system for a free one.
  const { port } = app.server.address() as { port: number };
  process.stdout.write(welcome(`http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}${apiPrefix}`, context));
}

main().catch((error) => {
  process.stderr.write(`Démarrage impossible : ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
