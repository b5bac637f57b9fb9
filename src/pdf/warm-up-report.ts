import type { ActivityReportData } from './activity-report';

/**
 * The report each render worker renders as it starts, before it takes a job (src/pdf/render-worker.ts):
 * loading pdfmake, reading the fonts (regular, bold, italics) and the first passes through the
 * builder and pdfmake's layout cost several times a whole report, and the first partner to ask for
 * one after a start would otherwise pay for them. Every section has rows (a table running onto a
 * second page, bars, accents, a missing value), so that every code path of a real report runs. Small,
 * since it is rendered several times; fixed, the same document on every start.
 */
export function warmUpReportData(): ActivityReportData {
  const learner = { userId: '00000000-0000-4000-8000-000000000000', email: 'prechauffage@exemple.fr', name: 'Élodie Préchauffage' };
  const common = { apprenant: learner.name, email: learner.email };
  const programme = { programme: 'Bureautique — niveau intermédiaire', programme_slug: 'bureautique' };
  const day = (index: number) => `2025-${String(1 + (index % 12)).padStart(2, '0')}-${String(1 + (index % 28)).padStart(2, '0')}`;
  const moduleTitle = (index: number) => `Module ${1 + (index % 4)} — Fondamentaux`;
  const lessonTitle = (index: number) => `Leçon ${1 + (index % 4)}.${1 + (index % 6)} — Références absolues et relatives`;
  const range = (length: number) => Array.from({ length }, (_, index) => index);

  const evaluations = range(6).map((index) => ({
    ...common,
    ...programme,
    module: moduleTitle(index),
    lecon: `Quiz du module ${1 + (index % 4)}`,
    tentative: 1 + Math.floor(index / 4),
    reussi: index % 3 === 0 ? ('Non' as const) : ('Oui' as const),
    score: 55 + index * 6,
    date: day(index),
  }));
  return {
    organisationName: 'Organisme de préchauffage',
    learner,
    year: 2025,
    programme: null,
    generatedAt: '2026-01-05 09:30',
    summary: {
      nom: learner.name,
      email: learner.email,
      invite_le: '2024-12-01',
      inscrit_le: '2024-12-03',
      connexions: 45,
      temps_actif_min: 4321,
      temps_cours_min: 3100,
      temps_labia_min: 120,
      temps_tutorat_min: 180,
      programmes_suivis: 1,
      programmes_completes: 0,
      evaluations_reussies: 4,
      evaluations_total: 6,
      score_moyen: 74,
      seances_tutorat: 3,
      seances_present: 2,
      pif_emis: 1,
      attestations_emises: 0,
      satisfaction_note: 4,
      nps: 9,
    },
    enrollments: [
      {
        ...common,
        ...programme,
        pourcentage: 33,
        lecons_vues: 8,
        lecons_total: 24,
        complete: 'Non',
        complete_le: null,
        derniere_activite_le: '2025-12-18',
        premiere_connexion_le: '2025-01-06 09:12',
        derniere_connexion_le: '2025-12-18 17:55',
      },
    ],
    logins: range(45).map((index) => ({
      ...common,
      debut: `${day(index)} 09:${String(index % 60).padStart(2, '0')}`,
      fin: `${day(index)} 10:${String(index % 60).padStart(2, '0')}`,
      duree_min: 60,
      ip: index % 2 === 0 ? '203.0.113.42' : '2001:db8:85a3::8a2e:370:7334',
      navigateur:
        index % 2 === 0
          ? 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:124.0) Gecko/20100101 Firefox/124.0'
          : 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
    })),
    progress: range(8).map((index) => ({
      ...common,
      ...programme,
      pourcentage_programme: 33,
      module: moduleTitle(index),
      lecon: lessonTitle(index),
      vue: 'Oui',
      visites: 1 + (index % 4),
      temps_min: 20 + index * 7,
      derniere_visite_le: day(index),
    })),
    evaluations,
    quizAnswers: evaluations.flatMap((evaluation) =>
      range(4).map((question) => ({
        ...evaluation,
        score_tentative: evaluation.score,
        question: `Question ${question + 1} : quelle fonction renvoie la position d’une valeur ?`,
        options: 'INDEX|EQUIV|RECHERCHEV|DECALER',
        reponse_choisie: question % 2 === 0 ? 'EQUIV' : 'INDEX',
        bonne_reponse: 'EQUIV',
        correct: question % 2 === 0 ? ('Oui' as const) : ('Non' as const),
        repondu_le: `${evaluation.date} 16:41`,
      })),
    ),
    attendance: range(3).map((index) => ({
      ...common,
      ...programme,
      seance: `Atelier tutoré n° ${index + 1} — échanges et cas pratiques`,
      date: `${day(index * 2)} 14:00`,
      duree_prevue_min: 90,
      present: index === 1 ? 'Non' : 'Oui',
      temps_connecte_min: index === 1 ? 0 : 90,
      signe_apprenant: index === 1 ? 'Non' : 'Oui',
      signe_formateur: index === 1 ? 'Non' : 'Oui',
    })),
    documents: [{ ...common, ...programme, type: 'PIF', emis_le: '2025-01-06', heures: 21.5, score_completion: null }],
    satisfaction: [
      {
        ...common,
        ...programme,
        note: 4,
        nps: 9,
        verbatim: 'Formation très concrète, les ateliers m’ont aidée.',
        repondu_le: '2025-12-18',
      },
    ],
    tutoringRatings: range(2).map((index) => ({
      ...common,
      ...programme,
      seance: `Atelier tutoré n° ${index + 1} — échanges et cas pratiques`,
      formateur: 'Julien Lefèvre',
      note_seance: index === 0 ? null : 4,
      note_formateur: 5,
      commentaire: 'Explications claires, très concret.',
      soumis_le: day(index * 2),
    })),
    lessonRatings: [
      { ...common, ...programme, module: moduleTitle(0), lecon: 'Bilan du module 1', note: 5, commentaire: null, soumis_le: '2025-02-01' },
    ],
  };
}
