/**
 * The programmes the generator creates: realistic French catalogue entries, each made of courses,
 * modules and lessons. Every module ends with a quiz lesson and a milestone (rateable) review
 * lesson; each quiz draws its questions from the programme's question bank.
 */
export interface QuestionTemplate {
  wording: string;
  options: string[];
  correct: string;
}

export interface ModuleTemplate {
  title: string;
  lessons: string[];
}

export interface ProgrammeTemplate {
  slug: string;
  title: string;
  /** Courses, each a list of modules. */
  courses: { title: string; modules: ModuleTemplate[] }[];
  questions: QuestionTemplate[];
  /** Share of learners who choose it (relative weight). */
  popularity: number;
  /** Whether tutoring sessions run for it. */
  tutored: boolean;
}

const q = (wording: string, correct: string, ...others: string[]): QuestionTemplate => ({
  wording,
  options: [correct, ...others],
  correct,
});

export const programmeTemplates: ProgrammeTemplate[] = [
  {
    slug: 'excel-intermediaire',
    title: 'Excel — niveau intermédiaire',
    popularity: 5,
    tutored: true,
    courses: [
      {
        title: 'Excel : calculer et organiser',
        modules: [
          {
            title: 'Module 1 — Rappels et bonnes pratiques',
            lessons: [
              'Se repérer dans l’interface',
              'Références relatives et absolues',
              'Mettre en forme un tableau',
              'Les formats de nombres et de dates',
            ],
          },
          {
            title: 'Module 2 — Formules avancées',
            lessons: [
              'Les fonctions SI imbriquées',
              'RECHERCHEV et RECHERCHEX',
              'INDEX et EQUIV',
              'Les fonctions de texte',
              'Les fonctions de date',
            ],
          },
        ],
      },
      {
        title: 'Excel : analyser les données',
        modules: [
          {
            title: 'Module 3 — Analyse de données',
            lessons: [
              'Trier et filtrer',
              'La mise en forme conditionnelle',
              'Les tableaux croisés dynamiques',
              'Les segments et chronologies',
            ],
          },
          {
            title: 'Module 4 — Graphiques et restitution',
            lessons: [
              'Choisir le bon graphique',
              'Graphiques combinés',
              'Construire un tableau de bord',
              'Protéger et partager un classeur',
            ],
          },
        ],
      },
    ],
    questions: [
      q('Quelle fonction renvoie la position d’une valeur dans une plage ?', 'EQUIV', 'INDEX', 'RECHERCHEV', 'DECALER'),
      q('Quel symbole fige une référence de cellule ?', '$', '#', '&', '!'),
      q(
        'Quel outil résume des milliers de lignes en quelques clics ?',
        'Le tableau croisé dynamique',
        'La validation des données',
        'Le gestionnaire de noms',
        'La fonction CONCAT',
      ),
      q(
        'Que renvoie =NB.SI(A1:A10;">5") ?',
        'Le nombre de cellules supérieures à 5',
        'La somme des cellules supérieures à 5',
        'La moyenne de la plage',
        'La première valeur supérieure à 5',
      ),
      q('Quelle fonction remplace avantageusement RECHERCHEV ?', 'RECHERCHEX', 'RECHERCHEH', 'CHOISIR', 'TROUVE'),
      q(
        'Comment nomme-t-on une plage pour la réutiliser dans les formules ?',
        'Avec le gestionnaire de noms',
        'Avec un commentaire',
        'Avec un segment',
        'Avec une macro',
      ),
      q('Quel graphique montre le mieux une évolution dans le temps ?', 'La courbe', 'Le secteur', 'Le nuage de points', 'L’anneau'),
      q(
        'Que fait la mise en forme conditionnelle ?',
        'Elle change l’apparence selon la valeur',
        'Elle trie les données',
        'Elle protège la feuille',
        'Elle calcule une moyenne',
      ),
    ],
  },
  {
    slug: 'management-equipe',
    title: 'Manager une équipe au quotidien',
    popularity: 3,
    tutored: true,
    courses: [
      {
        title: 'Les fondamentaux du management',
        modules: [
          {
            title: 'Module 1 — Prendre sa place de manager',
            lessons: ['Les rôles du manager', 'Passer de collègue à manager', 'Connaître son style de management', 'Fixer un cadre clair'],
          },
          {
            title: 'Module 2 — Communiquer avec son équipe',
            lessons: ['L’écoute active', 'Donner un feedback utile', 'Conduire une réunion efficace', 'Gérer les tensions'],
          },
          {
            title: 'Module 3 — Faire grandir son équipe',
            lessons: ['Fixer des objectifs SMART', 'Déléguer sans s’effacer', 'Mener l’entretien annuel', 'Reconnaître et motiver'],
          },
        ],
      },
    ],
    questions: [
      q('Que signifie le « S » de SMART ?', 'Spécifique', 'Simple', 'Stratégique', 'Suivi'),
      q(
        'Quelle attitude caractérise l’écoute active ?',
        'Reformuler ce que l’on a compris',
        'Préparer sa réponse pendant que l’autre parle',
        'Donner vite une solution',
        'Éviter les questions',
      ),
      q('Un feedback utile porte d’abord sur…', 'des faits observables', 'la personnalité', 'des rumeurs', 'les intentions supposées'),
      q(
        'Déléguer, c’est…',
        'confier une mission avec un résultat attendu',
        'se débarrasser d’une tâche',
        'contrôler chaque étape',
        'laisser faire sans suivi',
      ),
      q(
        'Quel est le premier objectif d’une réunion ?',
        'Un résultat clair et partagé',
        'Occuper l’agenda',
        'Informer la direction',
        'Faire parler chacun',
      ),
      q(
        'Face à un conflit entre deux collaborateurs, le manager…',
        'écoute chacun puis cadre un échange',
        'choisit un camp',
        'attend que cela passe',
        'sanctionne les deux',
      ),
    ],
  },
  {
    slug: 'ia-generative',
    title: 'IA générative au travail',
    popularity: 4,
    tutored: false,
    courses: [
      {
        title: 'Comprendre et utiliser l’IA générative',
        modules: [
          {
            title: 'Module 1 — Comprendre les modèles de langage',
            lessons: [
              'Ce qu’est un modèle de langage',
              'Forces et limites',
              'Hallucinations et vérification',
              'Données personnelles et confidentialité',
            ],
          },
          {
            title: 'Module 2 — L’art de la consigne',
            lessons: ['Structurer une consigne', 'Donner un rôle et un contexte', 'Itérer sur une réponse', 'Bibliothèque de consignes'],
          },
          {
            title: 'Module 3 — Cas d’usage métier',
            lessons: [
              'Rédiger et résumer',
              'Analyser un document',
              'Préparer une présentation',
              'Automatiser une tâche répétitive',
              'Cadre d’usage dans l’entreprise',
            ],
          },
        ],
      },
    ],
    questions: [
      q(
        'Qu’appelle-t-on une hallucination d’un modèle ?',
        'Une réponse fausse présentée comme vraie',
        'Une panne du service',
        'Une réponse trop longue',
        'Une consigne mal écrite',
      ),
      q(
        'Que faut-il éviter de coller dans un outil d’IA public ?',
        'Des données personnelles de clients',
        'Un texte déjà publié',
        'Une question générale',
        'Un plan de présentation',
      ),
      q(
        'Quel élément améliore le plus une consigne ?',
        'Un contexte précis et un format attendu',
        'Des majuscules',
        'Une formule de politesse',
        'Un seul mot-clé',
      ),
      q(
        'Pour fiabiliser une réponse chiffrée, on…',
        'vérifie à la source',
        'relance la même question',
        'demande plus de détails',
        'change d’outil',
      ),
      q(
        'Itérer sur une réponse consiste à…',
        'affiner la consigne à partir du résultat',
        'recommencer de zéro',
        'copier la réponse telle quelle',
        'demander à un collègue',
      ),
      q(
        'Un modèle de langage prédit…',
        'la suite la plus probable d’un texte',
        'la vérité',
        'l’intention de l’utilisateur',
        'le cours de la bourse',
      ),
    ],
  },
  {
    slug: 'anglais-professionnel',
    title: 'Anglais professionnel — B1 vers B2',
    popularity: 3,
    tutored: true,
    courses: [
      {
        title: 'Business English: communicate',
        modules: [
          {
            title: 'Module 1 — Introductions and small talk',
            lessons: ['Presenting yourself', 'Small talk that works', 'Talking about your job', 'Phone calls'],
          },
          { title: 'Module 2 — Meetings', lessons: ['Opening a meeting', 'Agreeing and disagreeing', 'Summing up', 'Writing the minutes'] },
        ],
      },
      {
        title: 'Business English: write and present',
        modules: [
          {
            title: 'Module 3 — Emails',
            lessons: ['Formal and informal emails', 'Making requests', 'Following up', 'Complaints and apologies'],
          },
          {
            title: 'Module 4 — Presentations',
            lessons: ['Structuring a talk', 'Signposting language', 'Describing figures and trends', 'Handling questions'],
          },
        ],
      },
    ],
    questions: [
      q('Choisissez la formule la plus polie : « … send me the report? »', 'Could you please', 'Send', 'You must', 'Give'),
      q('« To follow up » signifie…', 'relancer', 'suivre quelqu’un', 'annuler', 'remercier'),
      q('Quelle phrase ouvre une réunion ?', 'Let’s get started.', 'See you soon.', 'Best regards.', 'Never mind.'),
      q('« Sales rose sharply » décrit une hausse…', 'forte et rapide', 'légère', 'irrégulière', 'nulle'),
      q('Le mot qui convient : « I look forward to … from you. »', 'hearing', 'hear', 'heard', 'be hearing'),
      q('« To sum up » introduit…', 'une synthèse', 'une objection', 'une question', 'une excuse'),
    ],
  },
  {
    slug: 'cybersecurite-reflexes',
    title: 'Cybersécurité : les bons réflexes',
    popularity: 2,
    tutored: false,
    courses: [
      {
        title: 'Se protéger au quotidien',
        modules: [
          {
            title: 'Module 1 — Les menaces courantes',
            lessons: ['L’hameçonnage', 'Les rançongiciels', 'L’ingénierie sociale', 'Les faux supports techniques'],
          },
          {
            title: 'Module 2 — Les bons réflexes',
            lessons: [
              'Des mots de passe solides',
              'La double authentification',
              'Les mises à jour',
              'Le télétravail en sécurité',
              'Signaler un incident',
            ],
          },
        ],
      },
    ],
    questions: [
      q(
        'Quel indice trahit souvent un courriel d’hameçonnage ?',
        'Une adresse d’expéditeur inhabituelle',
        'Une signature complète',
        'Un message court',
        'Un objet en français',
      ),
      q('Un bon mot de passe est avant tout…', 'long et unique', 'facile à retenir pour tous', 'identique partout', 'changé chaque jour'),
      q(
        'La double authentification ajoute…',
        'une seconde preuve d’identité',
        'un second mot de passe identique',
        'une sauvegarde',
        'un antivirus',
      ),
      q(
        'Face à un rançongiciel, on commence par…',
        'isoler le poste du réseau',
        'payer la rançon',
        'redémarrer plusieurs fois',
        'attendre',
      ),
      q(
        'Un appel d’un « support technique » non sollicité est…',
        'à traiter avec méfiance',
        'toujours légitime',
        'à rappeler plus tard',
        'sans risque',
      ),
    ],
  },
  {
    slug: 'prise-de-parole',
    title: 'Prise de parole en public',
    popularity: 2,
    tutored: true,
    courses: [
      {
        title: 'Oser et convaincre',
        modules: [
          {
            title: 'Module 1 — Préparer son intervention',
            lessons: ['Connaître son public', 'Construire un message clair', 'Soigner l’introduction', 'Préparer ses supports'],
          },
          {
            title: 'Module 2 — Captiver son auditoire',
            lessons: ['La voix et le rythme', 'Le regard et la posture', 'Gérer le trac', 'Répondre aux questions difficiles'],
          },
        ],
      },
    ],
    questions: [
      q(
        'Que faut-il connaître avant de préparer une intervention ?',
        'Son public et son objectif',
        'La taille de la salle seulement',
        'Le nombre de diapositives',
        'La durée de la pause',
      ),
      q(
        'Une bonne introduction…',
        'capte l’attention dès la première phrase',
        'énumère tout le plan en détail',
        'commence par des excuses',
        'lit la première diapositive',
      ),
      q(
        'Pour gérer le trac, on peut…',
        'respirer lentement et se préparer',
        'parler plus vite',
        'éviter de regarder le public',
        'improviser entièrement',
      ),
      q(
        'Face à une question difficile, on…',
        'reformule puis répond avec honnêteté',
        'ignore la question',
        'change de sujet',
        'répond par une question',
      ),
      q('Le regard doit…', 'balayer l’ensemble de l’auditoire', 'rester sur les notes', 'fixer une seule personne', 'fuir le public'),
    ],
  },
];

export const trainerNames = [
  'Julien Lefèvre',
  'Sophie Marchand',
  'Nadia Benali',
  'Thomas Girard',
  'Claire Fontaine',
  'Karim Haddad',
  'Émilie Rousseau',
  'Olivier Perrin',
];
