import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordEvent } from '../db/webhooks';
import { verifyWebhook } from '../src/webhooks/verify';
import { startWebhookDelivery, type WebhookDelivery } from '../src/webhooks/worker';
import { admin, adminFailure, adminText } from './support/admin';
import { testConfig } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { eventually, startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

const database = useTestDatabase();
let orgId: string;
let worker: WebhookDelivery;
let receiver: WebhookReceiver;

// The commands run as child processes with this environment: loopback http receivers allowed.
process.env.WEBHOOK_ALLOW_INSECURE = '1';

beforeAll(async () => {
  orgId = (await createOrgWithKeys(database.db)).orgId;
  receiver = await startWebhookReceiver();
  worker = await startWebhookDelivery({
    connectionString: database.url,
    db: database.db,
    config: testConfig({ webhookAllowInsecure: true, webhookRetryDelaysSeconds: [0.2, 0.2, 0.2, 0.2, 0.2] }),
  });
});
afterAll(async () => {
  await worker.stop();
  await receiver.close();
});

const enrolled = () => ({ orgId, type: 'learner.enrolled' as const, data: { learner: null, status: 'pending' as const, programmes: [] } });

describe('webhook commands', () => {
  it('create, list, ping, deliveries, disable, enable, replay and rotate-secret', async () => {
    const created = await admin(database.url, [
      'webhook',
      'create',
      '--org',
      orgId,
      '--url',
      receiver.url,
      '--events',
      'learner.enrolled,quiz.completed',
    ]);
    expect(created).toEqual({
      id: expect.any(String),
      secret: expect.stringMatching(/^whsec_[\w-]{43}$/),
      url: receiver.url,
      events: ['learner.enrolled', 'quiz.completed'],
    });
    const all = await admin(database.url, ['webhook', 'create', '--org', orgId, '--url', `${receiver.url}?tous`]);
    expect(all.events).toEqual([
      'quiz.completed',
      'course.started',
      'programme.completed',
      'learner.enrolled',
      'learner.activated',
      'satisfaction.submitted',
    ]);

    const listed = await admin(database.url, ['webhook', 'list', '--org', orgId]);
    expect(listed.endpoints.map((e: { id: string }) => e.id)).toEqual([created.id, all.id]);
    expect(listed.endpoints[0]).toMatchObject({
      url: receiver.url,
      enabled: true,
      consecutive_failures: 0,
      previous_secret_valid_until: null,
    });
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    expect(JSON.stringify(listed)).not.toContain('whsec_');

    const ping = await admin(database.url, ['webhook', 'ping', '--id', created.id]);
    expect(ping).toEqual({ endpoint: created.id, event_id: expect.any(String), delivery_id: expect.any(String) });
    await receiver.waitFor((r) => r.some((x) => x.deliveryId === ping.delivery_id));
    const pinged = receiver.received.find((x) => x.deliveryId === ping.delivery_id)!;
    expect(verifyWebhook(pinged.rawBody, pinged.headers['x-service-signature'], created.secret)).toMatchObject({
      id: ping.event_id,
      type: 'ping',
    });

    const log = await admin(database.url, ['webhook', 'deliveries', '--id', created.id]);
    expect(log.deliveries).toEqual([
      expect.objectContaining({
        id: ping.delivery_id,
        event_id: ping.event_id,
        event: 'ping',
        status: 'delivered',
        attempt_count: 1,
        attempts: [
          expect.objectContaining({
            status_code: 200,
            succeeded: true,
            duration_ms: expect.any(Number),
            error: null,
            error_code: null,
            response_excerpt: 'ok',
          }),
        ],
      }),
    ]);
    expect((await admin(database.url, ['webhook', 'deliveries', '--id', created.id, '--status', 'dead'])).deliveries).toEqual([]);

    // Disabled: an event makes no delivery; a ping waits for the endpoint to come back.
    expect(await admin(database.url, ['webhook', 'disable', '--id', created.id])).toMatchObject({
      enabled: false,
      disabled_reason: 'operator',
    });
    await recordEvent(database.db, enrolled());
    const waiting = await admin(database.url, ['webhook', 'ping', '--id', created.id]);
    expect(waiting.note).toMatch(/désactivé/);
    // Its job comes and sets it aside: no attempt is planned until the endpoint is enabled.
    const pending = await eventually(
      () => admin(database.url, ['webhook', 'deliveries', '--id', created.id, '--status', 'pending']),
      (listing) => listing.deliveries[0]?.next_attempt_at === null,
      10_000,
    );
    expect(pending.deliveries).toEqual([expect.objectContaining({ id: waiting.delivery_id, status: 'pending', next_attempt_at: null })]);
    expect((await adminText(database.url, ['webhook', 'deliveries', '--id', created.id, '--status', 'pending'])).stdout).toMatch(
      new RegExp(`\\n${waiting.delivery_id}  ping +en attente de la réactivation du point de réception +aucune`),
    );
    expect(await admin(database.url, ['webhook', 'enable', '--id', created.id])).toMatchObject({ enabled: true, resumed_deliveries: 1 });
    await receiver.waitFor((r) => r.some((x) => x.deliveryId === waiting.delivery_id));

    const sent = receiver.received.filter((x) => x.deliveryId === ping.delivery_id).length;
    expect(await admin(database.url, ['webhook', 'replay', '--delivery', ping.delivery_id])).toEqual({
      id: ping.delivery_id,
      endpoint: created.id,
      status: 'pending',
    });
    await receiver.waitFor((r) => r.filter((x) => x.deliveryId === ping.delivery_id).length === sent + 1);

    const rotated = await admin(database.url, ['webhook', 'rotate-secret', '--id', created.id]);
    expect(rotated).toEqual({ id: created.id, secret: expect.stringMatching(/^whsec_/), previous_secret_valid_until: expect.any(String) });
    expect(rotated.secret).not.toBe(created.secret);
    const afterRotation = await admin(database.url, ['webhook', 'ping', '--id', created.id]);
    await receiver.waitFor((r) => r.some((x) => x.deliveryId === afterRotation.delivery_id));
    const signed = receiver.received.find((x) => x.deliveryId === afterRotation.delivery_id)!;
    for (const secret of [created.secret, rotated.secret]) {
      expect(verifyWebhook(signed.rawBody, signed.headers['x-service-signature'], secret).type).toBe('ping');
    }
    expect((await admin(database.url, ['webhook', 'list', '--org', orgId])).endpoints[0].previous_secret_valid_until).toBe(
      rotated.previous_secret_valid_until,
    );
  }, 120_000);

  it('speak French sentences and tables without --json, with times of Paris', async () => {
    const human = async (args: string[]) => {
      const { stdout } = await adminText(database.url, args);
      expect(stdout, args.join(' ')).not.toMatch(/^[a-z_]+: /m);
      expect(stdout, args.join(' ')).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
      return stdout;
    };
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
    const created = await human(['webhook', 'create', '--org', orgId, '--url', `${receiver.url}?lisible`, '--events', 'learner.enrolled']);
    expect(created).toMatch(/^Point de réception créé pour « Formations Dupont » :\n {2}identifiant +: /);
    expect(created).toContain(`  adresse                        : ${receiver.url}?lisible\n`);
    expect(created).toContain('  état                           : actif\n');
    expect(created).toMatch(/\nSecret de signature : whsec_[\w-]{43}\nNotez-le maintenant : il n’est affiché qu’une fois\./);
    // The receiver is local and plain http, allowed here for development only: the command says the server needs it too.
    expect(created).toMatch(/\nAdresse acceptée grâce à WEBHOOK_ALLOW_INSECURE : le serveur qui livre doit l’avoir aussi/);
    const id = uuid.exec(created)![0];

    const pinged = await human(['webhook', 'ping', '--id', id]);
    expect(pinged).toMatch(/^Ping envoyé : il part dans les secondes qui suivent\.\n {2}événement : .+\n {2}livraison : .+\n/);
    const deliveryId = /livraison : (\S+)/.exec(pinged)![1]!;
    await receiver.waitFor((r) => r.some((x) => x.deliveryId === deliveryId));
    // The worker records the attempt just after the answer: wait for the log to show it.
    let log = '';
    for (let tries = 0; tries < 50 && !log.includes('livrée le'); tries += 1) log = await human(['webhook', 'deliveries', '--id', id]);
    const lines = log.split('\n');
    expect(lines[0]).toBe('1 livraison, les plus récentes d’abord (heures de Paris) :');
    expect(lines[1]).toMatch(/^Livraison +Événement +Statut +Tentative +Réponse +Durée +Erreur$/);
    expect(lines[2]).toMatch(
      new RegExp(
        `^${deliveryId}  ping +livrée le \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d +1 le \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d +HTTP 200 +\\d+ ms +—$`,
      ),
    );
    expect(await human(['webhook', 'deliveries', '--id', id, '--status', 'dead'])).toBe(
      'Aucune livraison (statut : abandonnée) pour ce point de réception.\n',
    );

    expect(await human(['webhook', 'disable', '--id', id])).toMatch(
      /^Point de réception désactivé : rien ne lui est envoyé, ses livraisons en attente sont gardées jusqu’à « webhook enable »\.\n[\s\S]* {2}état +: désactivé par un opérateur le \d{4}-\d\d-\d\d \d\d:\d\d\n/,
    );
    const listed = (await human(['webhook', 'list', '--org', orgId])).split('\n');
    expect(listed[0]).toMatch(/^Identifiant +Adresse +Événements +État +Créé le$/);
    expect(listed.find((line) => line.startsWith(id))).toMatch(
      / learner\.enrolled +désactivé par un opérateur le [\d-]+ [\d:]+ +[\d-]+ [\d:]+$/,
    );
    expect(await human(['webhook', 'enable', '--id', id])).toMatch(/^Point de réception réactivé ; 0 livraison en attente reprend\.\n/);
    expect(await human(['webhook', 'replay', '--delivery', deliveryId])).toBe(
      `Livraison ${deliveryId} (livrée) renvoyée : même identifiant, même corps, six nouvelles tentatives. Son résultat : webhook deliveries --id ${id}\n`,
    );
    expect(await human(['webhook', 'rotate-secret', '--id', id])).toMatch(
      /^Nouveau secret de signature : whsec_[\w-]{43}\nNotez-le maintenant : il n’est affiché qu’une fois\.\nL’ancien signe encore jusqu’au \d{4}-\d\d-\d\d \d\d:\d\d \(heure de Paris\) : chaque envoi porte alors deux v1=, un par secret\.\n$/,
    );
  }, 120_000);

  it('refuse unsafe addresses and bad arguments with a clear message and exit code 2', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const cases: [string[], RegExp][] = [
      [['webhook', 'create', '--org', orgId, '--url', 'http://10.1.2.3/hooks'], /Adresse refusée : 10\.1\.2\.3 : adresse privée/],
      [
        ['webhook', 'create', '--org', orgId, '--url', 'http://169.254.169.254/latest/meta-data'],
        /adresse privée, locale, réservée ou de métadonnées/,
      ],
      [['webhook', 'create', '--org', orgId, '--url', 'http://[fd00:ec2::254]/'], /Adresse refusée/],
      [['webhook', 'create', '--org', orgId, '--url', 'https://user:pw@exemple.fr/'], /identifiants/],
      [['webhook', 'create', '--org', orgId, '--url', 'ftp://exemple.fr/'], /https/],
      [['webhook', 'create', '--org', orgId, '--url', 'pas une adresse'], /adresse invalide/],
      [['webhook', 'create', '--org', orgId, '--url', 'https://nexiste-pas.invalid/'], /ne se résout pas/],
      [['webhook', 'create', '--org', orgId, '--url', receiver.url, '--events', 'ping'], /ne s’abonne pas/],
      [['webhook', 'create', '--org', orgId, '--url', receiver.url, '--events', 'quiz.finished'], /type inconnu « quiz.finished »/],
      [['webhook', 'create', '--org', missing, '--url', receiver.url], /Aucune organisation/],
      [['webhook', 'deliveries', '--id', missing, '--status', 'lost'], /--status doit valoir pending, delivered ou dead \(reçu « lost »\)/],
      [['webhook', 'ping', '--id', missing], /Aucun point de réception/],
      [['webhook', 'enable', '--id', missing], /Aucun point de réception/],
      [['webhook', 'replay', '--delivery', missing], /Aucune livraison/],
      [['webhook', 'rotate-secret', '--id', 'abc'], /UUID/],
    ];
    // A few at a time: each is a process of its own.
    for (let start = 0; start < cases.length; start += 4) {
      await Promise.all(
        cases.slice(start, start + 4).map(async ([args, message]) => {
          const failure = await adminFailure(database.url, args);
          expect(failure.code, args.join(' ')).toBe(2);
          expect(failure.stderr, args.join(' ')).toMatch(message);
        }),
      );
    }
    // Without the development allowance: https only, and no loopback.
    process.env.WEBHOOK_ALLOW_INSECURE = '0';
    try {
      const refused = (await adminFailure(database.url, ['webhook', 'create', '--org', orgId, '--url', receiver.url])).stderr;
      expect(refused).toMatch(/doit être en https/);
      // What would let it through, and that the server that delivers needs it too.
      expect(refused).toMatch(
        /WEBHOOK_ALLOW_INSECURE=1 accepte http et les adresses locales : donnez-le à cette commande et au serveur qui livre/,
      );
      expect((await adminFailure(database.url, ['webhook', 'create', '--org', orgId, '--url', 'ftp://exemple.fr/'])).stderr).not.toMatch(
        /WEBHOOK_ALLOW_INSECURE/,
      );
      expect((await adminFailure(database.url, ['webhook', 'create', '--org', orgId, '--url', 'https://127.0.0.1/'])).stderr).toMatch(
        /loopback/,
      );
      expect((await adminFailure(database.url, ['webhook', 'create', '--org', orgId, '--url', 'https://localhost/'])).stderr).toMatch(
        /localhost se résout en .*loopback/,
      );
    } finally {
      process.env.WEBHOOK_ALLOW_INSECURE = '1';
    }
  }, 120_000);
});
