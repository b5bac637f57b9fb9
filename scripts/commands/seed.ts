import { SeedRefused, seedOrganisation } from '../../src/local/seed/generate';
import { type AdminCommand, positiveInteger, requiredUuid, requireOrganisation, UsageError } from '../command';
import { count, table } from '../output';
import { ProgressBar } from '../progress-bar';

export const commands: AdminCommand[] = [
  {
    name: 'seed',
    usage: '--org ID --learners N [--seed S] [--year AAAA]',
    description:
      'Peuple une organisation d’apprenants fictifs et de trois années civiles de données de suivi (déterministe : même --seed, mêmes données).',
    options: { org: { type: 'string' }, learners: { type: 'string' }, seed: { type: 'string' }, year: { type: 'string' } },
    async run(context) {
      const orgId = requiredUuid(context.values, 'org');
      const learners = positiveInteger(context.values, 'learners');
      const seed = positiveInteger(context.values, 'seed', 1);
      const year = context.values.year === undefined ? undefined : positiveInteger(context.values, 'year');
      if (year !== undefined && (year < 2000 || year > 2100))
        throw new UsageError(`--year doit être une année entre 2000 et 2100 (reçu « ${year} »).`);
      const organisation = await requireOrganisation(context.db, orgId);
      const bar = new ProgressBar('Génération', learners);
      const started = Date.now();
      let result: Awaited<ReturnType<typeof seedOrganisation>>;
      try {
        result = await seedOrganisation(context.db, {
          orgId,
          learners,
          seed,
          year,
          onProgress: (done, rows) => bar.update(done, `${rows.toLocaleString('fr-FR')} lignes`),
        });
      } catch (error) {
        if (error instanceof SeedRefused) throw new UsageError(error.message);
        throw error;
      }
      const rows = Object.values(result.rows).reduce((a, b) => a + b, 0);
      bar.finish(`${rows.toLocaleString('fr-FR')} lignes`);
      const seconds = Math.round((Date.now() - started) / 100) / 10;
      return {
        json: { ...result, total_rows: rows, seconds },
        text: [
          `« ${organisation.name} » peuplée : ${count(result.learners, 'apprenant')}, ${count(rows, 'ligne')} en ${seconds.toLocaleString('fr-FR')} s, ` +
            `activité du ${result.from} au ${result.to} (graine ${result.seed}).`,
          `Programmes : ${result.programmes.join(', ')}.`,
          table(
            Object.entries(result.rows),
            [
              { header: 'Table', value: ([name]) => name },
              { header: 'Lignes', value: ([, n]) => n, align: 'right' },
            ],
            '',
          ),
        ].join('\n'),
      };
    },
  },
];
