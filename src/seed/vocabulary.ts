/** Words the generator draws from: French names, mail providers, devices, and what learners write. */
export const firstNames = [
  'Camille', 'Léa', 'Manon', 'Chloé', 'Emma', 'Inès', 'Sarah', 'Julie', 'Laura', 'Marie', 'Pauline', 'Anaïs', 'Clara', 'Lucie', 'Océane',
  'Élodie', 'Mathilde', 'Charlotte', 'Juliette', 'Zoé', 'Nathalie', 'Isabelle', 'Sandrine', 'Céline', 'Valérie', 'Sophie', 'Aurélie', 'Émilie',
  'Hélène', 'Agnès', 'Béatrice', 'Françoise', 'Margaux', 'Noémie', 'Yasmine', 'Fatima', 'Amandine', 'Gaëlle', 'Morgane', 'Solène',
  'Lucas', 'Hugo', 'Thomas', 'Nicolas', 'Julien', 'Maxime', 'Alexandre', 'Antoine', 'Quentin', 'Romain', 'Kevin', 'Clément', 'Théo', 'Louis',
  'Nathan', 'Mathieu', 'Guillaume', 'Pierre', 'Sébastien', 'Stéphane', 'Laurent', 'Philippe', 'Olivier', 'Frédéric', 'Jérôme', 'François',
  'Benoît', 'Cédric', 'Damien', 'Yannick', 'Mehdi', 'Karim', 'Rachid', 'Jean-Baptiste', 'Jean-Marc', 'Loïc', 'Gaël', 'Florian', 'Adrien', 'Bastien',
];

export const lastNames = [
  'Martin', 'Bernard', 'Thomas', 'Petit', 'Robert', 'Richard', 'Durand', 'Dubois', 'Moreau', 'Laurent', 'Simon', 'Michel', 'Lefèvre', 'Leroy',
  'Roux', 'David', 'Bertrand', 'Morel', 'Fournier', 'Girard', 'Bonnet', 'Dupont', 'Lambert', 'Fontaine', 'Rousseau', 'Vincent', 'Muller',
  'Lefebvre', 'Faure', 'André', 'Mercier', 'Blanc', 'Guérin', 'Boyer', 'Garnier', 'Chevalier', 'François', 'Legrand', 'Gauthier', 'Garcia',
  'Perrin', 'Robin', 'Clément', 'Morin', 'Nicolas', 'Henry', 'Roussel', 'Mathieu', 'Gautier', 'Masson', 'Marchand', 'Duval', 'Denis', 'Dumont',
  'Marie', 'Lemaire', 'Noël', 'Meyer', 'Dufour', 'Meunier', 'Brun', 'Blanchard', 'Giraud', 'Joly', 'Rivière', 'Lucas', 'Brunet', 'Gaillard',
  'Barbier', 'Arnaud', 'Martinez', 'Gérard', 'Roche', 'Renard', 'Schmitt', 'Roy', 'Leroux', 'Colin', 'Vidal', 'Caron', 'Picard', 'Roger',
  'Fabre', 'Aubert', 'Lemoine', 'Renaud', 'Dumas', 'Lacroix', 'Olivier', 'Philippe', 'Bourgeois', 'Pierre', 'Benoît', 'Rey', 'Leclerc',
  'Payet', 'Rolland', 'Leclercq', 'Guillaume', 'Lecomte', 'Lopez', 'Jean', 'Dupuy', 'Guillot', 'Hubert', 'Berger', 'Carpentier', 'Sanchez',
  'Benali', 'Haddad', 'Nguyen', 'Da Silva', 'Le Gall', 'Le Goff', 'Kerleau', 'N’Diaye', 'Traoré', 'Ferreira',
];

/** Personal mail providers used in France, by how often they appear. */
export const mailDomains: (readonly [string, number])[] = [
  ['gmail.com', 30], ['orange.fr', 14], ['free.fr', 8], ['hotmail.fr', 8], ['outlook.fr', 6], ['yahoo.fr', 5], ['laposte.net', 5],
  ['sfr.fr', 4], ['wanadoo.fr', 3], ['icloud.com', 3], ['bbox.fr', 2],
];

/** Company domains of client businesses whose staff train with the organisation. */
export const companyDomains = [
  'boulangeries-martin.fr', 'transports-lemoine.fr', 'cabinet-roux-associes.fr', 'groupe-hexagone.fr', 'mairie-saint-aubin.fr',
  'clinique-des-tilleuls.fr', 'atelier-fontaine.fr', 'batiplus-ouest.fr', 'credit-regional.fr', 'agence-horizon.fr',
];

export const userAgents = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:124.0) Gecko/20100101 Firefox/124.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
];

/** First octets of French consumer and business IPv4 ranges. */
export const ipv4Prefixes = [[90, 0], [86, 0], [82, 64], [78, 192], [176, 128], [92, 88], [109, 0], [37, 164], [88, 160], [81, 185]] as const;

export const surveyVerbatims = [
  'Formation très concrète, directement applicable dans mon poste.',
  'Les ateliers tutorés m’ont beaucoup aidée.',
  'Contenu clair, mais certains modules sont un peu longs.',
  'J’aurais aimé plus d’exercices pratiques.',
  'Très bon rythme, je recommande à mes collègues.',
  'Les quiz permettent de vérifier ses acquis, c’est motivant.',
  'Plateforme agréable, vidéos de qualité.',
  'Un peu trop théorique à mon goût.',
  'Le formateur était disponible et pédagogue.',
  'Parfait pour reprendre les bases avant d’aller plus loin.',
  'Difficile de trouver le temps de suivre les modules avec mon activité.',
  'Excellente formation, merci !',
];

export const tutoringComments = [
  'Explications claires et beaucoup d’exemples.',
  'Séance utile, j’ai pu poser toutes mes questions.',
  'Un peu rapide sur la fin.',
  'Très bonne animation du groupe.',
  'Le son coupait par moments.',
  'Formateur à l’écoute, merci.',
  'J’aurais aimé plus de temps pour les exercices.',
];

export const lessonComments = [
  'Bilan utile pour faire le point.',
  'Clair et bien structuré.',
  'Les exemples m’ont aidé.',
  'Un peu long.',
  'Très bon module.',
  'J’aurais aimé un exercice de plus.',
];
