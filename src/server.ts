import { buildApp, apiPrefix } from './app';
import { loadConfig } from './config';
import { openDatabase } from './database';
import { deleteIdleBuckets } from '../db/api-keys';
import { seedDemoOnFirstStart } from './demo';
import { startWebhookDelivery } from './webhooks/worker';

/** `make run` / `npm start`: database (embedded unless DATABASE_URL), migrations, demo, server. */
async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config, { poolSize: 20 });
  const demo = await seedDemoOnFirstStart(database.db, config);
  const app = await buildApp({ config, db: database.db });
  const webhooks = await startWebhookDelivery({ connectionString: database.connectionString, db: database.db, config, log: app.log });

  const sweeper = setInterval(() => {
    deleteIdleBuckets(database.db, config.rateLimitWindowSeconds).catch((error) => app.log.warn({ err: error }, 'nettoyage des fenêtres de débit'));
  }, 60_000);
  sweeper.unref();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info(`${signal} reçu : arrêt propre`);
    clearInterval(sweeper);
    await app.close();
    await webhooks.stop();
    await database.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
  // The port actually bound: PORT=0 asks the system for a free one.
  const { port } = app.server.address() as { port: number };
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}${apiPrefix}`;
  const lines = [
    '',
    `API partenaires prête : ${base}`,
    `Documentation : ${base}/docs   (document : ${base}/openapi.yaml)`,
  ];
  if (demo) {
    lines.push(
      `Organisation de démonstration : ${demo.orgName} (${demo.orgId})`,
      `  clé lecture  : ${demo.readKey}`,
      `  clé écriture : ${demo.writeKey}`,
      `Essai : curl -H "Authorization: Bearer ${demo.readKey}" "${base}/summary"`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n\n');
}

main().catch((error) => {
  process.stderr.write(`Démarrage impossible : ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
