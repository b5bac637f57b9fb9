import type { ActivityReportData } from '../src/pdf/activity-report';

/**
 * Deterministic report data shaped like the resources' rows, for the pure builder's tests: a heavy
 * learner (a year of daily logins, three programmes, many quiz attempts) or an empty one.
 */
export function sampleReportData(size: 'heavy' | 'empty' | 'small' = 'heavy'): ActivityReportData {
  const learner = { userId: '0b5c2a7e-3f64-4b1e-9d62-1c4f5e7a9b10', email: 'helene.lefevre@exemple.fr', name: 'Hélène Lefèvre-Ørsted' };
  const base: ActivityReportData = {
    organisationName: 'Formations Côte d’Émeraude',
    learner,
    year: 2026,
    programme: null,
    generatedAt: '2026-11-22 09:30',
    summary: {
      nom: learner.name,
      email: learner.email,
      invite_le: '2025-12-01',
      inscrit_le: '2025-12-03',
      connexions: 0,
      temps_actif_min: 0,
      temps_cours_min: 0,
      temps_labia_min: 0,
      temps_tutorat_min: 0,
      programmes_suivis: 0,
      programmes_completes: 0,
      evaluations_reussies: 0,
      evaluations_total: 0,
      score_moyen: null,
      seances_tutorat: 0,
      seances_present: 0,
      pif_emis: 0,
      attestations_emises: 0,
      satisfaction_note: null,
      nps: null,
    },
    enrollments: [],
    logins: [],
    progress: [],
    evaluations: [],
    quizAnswers: [],
    attendance: [],
    documents: [],
    satisfaction: [],
    tutoringRatings: [],
    lessonRatings: [],
  };
  if (size === 'empty') return base;

  const random = mulberry32(42);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
  const days = size === 'heavy' ? 365 : 12;
  const common = { apprenant: learner.name, email: learner.email };
  const programmes = [
    { slug: 'excel-intermediaire', title: 'Excel — niveau intermédiaire' },
    { slug: 'gestion-de-projet', title: 'Gestion de projet : méthodes agiles' },
    { slug: 'francais-ecrit', title: 'Écrits professionnels et orthographe' },
  ].slice(0, size === 'heavy' ? 3 : 1);
  const agents = [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:124.0) Gecko/20100101 Firefox/124.0',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Safari/537.36',
  ];
  const date = (dayOfYear: number) => new Date(Date.UTC(2026, 0, 1 + dayOfYear)).toISOString().slice(0, 10);
  const time = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

  for (let day = 0; day < days; day += 1) {
    for (let session = 0; session < (size === 'heavy' ? 2 : 1); session += 1) {
      const start = 8 * 60 + session * 300 + Math.floor(random() * 120);
      const duration = 10 + Math.floor(random() * 110);
      base.logins.push({
        ...common,
        debut: `${date(day)} ${time(start)}`,
        fin: `${date(day)} ${time(start + duration)}`,
        duree_min: duration,
        ip: pick(['203.0.113.42', '198.51.100.7', '2001:db8:85a3::8a2e:370:7334']),
        navigateur: pick(agents),
      });
    }
  }
  for (const programme of programmes) {
    const modules = size === 'heavy' ? 8 : 2;
    let viewed = 0;
    let total = 0;
    for (let module = 1; module <= modules; module += 1) {
      const moduleTitle = `Module ${module} — ${pick(['Fondamentaux', 'Formules avancées', 'Analyse de données', 'Présentation à l’oral', 'Synthèse écrite'])}`;
      for (let lesson = 1; lesson <= 6; lesson += 1) {
        const visits = Math.floor(random() * 5);
        total += 1;
        if (visits > 0) viewed += 1;
        // Only lessons with activity in the year have a row.
        if (visits > 0)
          base.progress.push({
            ...common,
            programme: programme.title,
            programme_slug: programme.slug,
            pourcentage_programme: 0,
            module: moduleTitle,
            lecon: `Leçon ${module}.${lesson} — ${pick(['Les tableaux croisés dynamiques', 'Écrire un courriel efficace', 'Planifier un sprint', 'Références absolues et relatives'])}`,
            vue: visits > 0 ? 'Oui' : 'Non',
            visites: visits,
            temps_min: visits * (5 + Math.floor(random() * 20)),
            derniere_visite_le: date(Math.floor(random() * days)),
          });
        if (lesson === 6) {
          for (let attempt = 1; attempt <= (size === 'heavy' ? 3 : 1); attempt += 1) {
            const score = 40 + Math.floor(random() * 61);
            const attemptDate = date(Math.floor(random() * days));
            const row = {
              ...common,
              programme: programme.title,
              programme_slug: programme.slug,
              module: moduleTitle,
              lecon: `Quiz du module ${module}`,
              tentative: attempt,
              reussi: score >= 70 ? ('Oui' as const) : ('Non' as const),
            };
            base.evaluations.push({ ...row, score, date: attemptDate });
            for (let question = 1; question <= 5; question += 1) {
              const correct = random() < score / 100;
              base.quizAnswers.push({
                ...row,
                score_tentative: score,
                question: `Question ${question} : quelle fonction renvoie la position d’une valeur ?`,
                options: 'INDEX|EQUIV|RECHERCHEV|DECALER',
                reponse_choisie: correct ? 'EQUIV' : 'INDEX',
                bonne_reponse: 'EQUIV',
                correct: correct ? 'Oui' : 'Non',
                repondu_le: `${attemptDate} 16:41`,
                date: attemptDate,
              });
            }
          }
        }
      }
    }
    const percentage = Math.round((viewed / total) * 100);
    for (const row of base.progress) if (row.programme_slug === programme.slug) row.pourcentage_programme = percentage;
    base.enrollments.push({
      ...common,
      programme: programme.title,
      programme_slug: programme.slug,
      pourcentage: percentage,
      lecons_vues: viewed,
      lecons_total: total,
      complete: percentage === 100 ? 'Oui' : 'Non',
      complete_le: null,
      derniere_activite_le: date(days - 1),
      premiere_connexion_le: `${date(0)} 09:12`,
      derniere_connexion_le: `${date(days - 1)} 17:55`,
    });
    base.documents.push({
      ...common,
      type: 'PIF',
      programme: programme.title,
      programme_slug: programme.slug,
      emis_le: date(0),
      heures: 21.5,
      score_completion: null,
    });
    for (let session = 1; session <= (size === 'heavy' ? 12 : 2); session += 1) {
      const present = random() < 0.85;
      base.attendance.push({
        ...common,
        seance: `Atelier tutoré n° ${session} — échanges et cas pratiques`,
        programme: programme.title,
        programme_slug: programme.slug,
        date: `${date(session * 20)} 14:00`,
        duree_prevue_min: 90,
        present: present ? 'Oui' : 'Non',
        temps_connecte_min: present ? 60 + Math.floor(random() * 30) : 0,
        signe_apprenant: present ? 'Oui' : 'Non',
        signe_formateur: present ? 'Oui' : 'Non',
      });
      base.tutoringRatings.push({
        ...common,
        seance: `Atelier tutoré n° ${session} — échanges et cas pratiques`,
        programme: programme.title,
        programme_slug: programme.slug,
        formateur: 'Julien Lefèvre',
        note_seance: session === 1 ? null : 4,
        note_formateur: 5,
        commentaire: 'Explications claires, très concret.',
        soumis_le: date(session * 20),
      });
    }
    base.satisfaction.push({
      ...common,
      programme: programme.title,
      programme_slug: programme.slug,
      note: 4,
      nps: 9,
      verbatim: 'Formation très concrète, les ateliers tutorés m’ont beaucoup aidée.',
      repondu_le: date(days - 1),
    });
    base.lessonRatings.push({
      ...common,
      programme: programme.title,
      programme_slug: programme.slug,
      module: 'Module 1 — Fondamentaux',
      lecon: 'Bilan du module 1',
      note: 5,
      commentaire: null,
      soumis_le: date(30),
    });
  }
  base.evaluations.sort((a, b) => a.date.localeCompare(b.date));
  base.summary = {
    ...base.summary!,
    connexions: base.logins.length,
    temps_actif_min: 4321,
    temps_cours_min: base.progress.reduce((sum, row) => sum + row.temps_min, 0),
    temps_labia_min: 120,
    temps_tutorat_min: base.attendance.reduce((sum, row) => sum + row.temps_connecte_min, 0),
    programmes_suivis: base.enrollments.length,
    evaluations_total: base.evaluations.length,
    evaluations_reussies: base.evaluations.filter((row) => row.reussi === 'Oui').length,
    score_moyen: 82,
    seances_tutorat: base.attendance.length,
    seances_present: base.attendance.filter((row) => row.present === 'Oui').length,
    pif_emis: base.documents.length,
    satisfaction_note: 4,
    nps: 9,
  };
  return base;
}

/** A small seeded generator: the same sample on every run. */
function mulberry32(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
