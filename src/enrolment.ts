import { fullFormats } from 'ajv-formats/dist/formats.js';
import type { components } from '../codegen/openapi';
import type { DB } from '../db/connection';
import {
  type EnrolmentCandidate,
  type EnrolmentOutcome,
  type EnrolmentRules,
  enrolLearners,
  InsufficientLicences,
  loadEnrolmentRules,
  type Member,
} from '../db/enrolment';
import { canonicalEmail } from '../db/learners';
import { ApiError } from './http/errors';

/*
 * Enrolment (POST /users): the rules the schema leaves to the server, then the transaction of
 * db/enrolment.ts, then each outcome as the contract answers it. One learner is enrolled or refused
 * with an error; a batch answers each row, unless it is atomic: then any row error refuses it whole
 * (docs/decisions.md#enrolment).
 */

type EnrolmentRequest = components['schemas']['EnrolmentRequest'];
type BulkEnrolmentResult = components['schemas']['BulkEnrolmentResult'];

/** The same rule as the `email` query parameter (ajv-formats' `email`), plus the SMTP length limit. */
const emailPattern = fullFormats.email as RegExp;
const maxEmailLength = 254;

type CheckedRow = { email: string } & ({ candidate: EnrolmentCandidate; error?: never } | { candidate?: never; error: ApiError });

/**
 * The checks the schema leaves to the server, so that a bad row of a batch fails on its own: the
 * email (trimmed, any case) must be an address, in an allowed domain (the part after `@` equal to
 * one of them, any case; a subdomain is not its parent). An unknown programme is the client's
 * catalogue error, not the row's: it refuses the whole request (400, nothing written).
 */
function checkRow(row: EnrolmentRequest, rules: EnrolmentRules, field: string): CheckedRow {
  const email = canonicalEmail(row.email);
  const slugs = [...new Set(row.programme_slugs ?? [])];
  const unknown = slugs.find((slug) => !rules.programmeIdsBySlug.has(slug));
  if (unknown !== undefined) {
    throw new ApiError(
      'unknown_programme',
      `Programme inconnu dans votre organisation : « ${unknown} » (${field}programme_slugs). Rien n’a été écrit.`,
      { param: `${field}programme_slugs` },
    );
  }
  if (email.length > maxEmailLength || !emailPattern.test(email)) {
    return {
      email,
      error: new ApiError('invalid_email', `« ${email} » n’est pas une adresse électronique valide.`, { param: `${field}email` }),
    };
  }
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (rules.allowedEmailDomains.length > 0 && !rules.allowedEmailDomains.includes(domain)) {
    return {
      email,
      error: new ApiError(
        'email_domain_not_allowed',
        `L’adresse « ${email} » n’appartient pas à un domaine autorisé pour votre organisation (domaines autorisés : ${rules.allowedEmailDomains.join(', ')}).`,
        { param: `${field}email` },
      ),
    };
  }
  return { email, candidate: { email, programmes: slugs.map((slug) => ({ id: rules.programmeIdsBySlug.get(slug)!, slug })) } };
}

/** Why a row was not enrolled; `field` is the row's place in the body (`users[3].`, or nothing for one learner). */
function outcomeError(outcome: Exclude<EnrolmentOutcome, { kind: 'enrolled' }>, field: string): ApiError {
  switch (outcome.kind) {
    case 'already_member':
      return new ApiError('already_member', undefined, { param: `${field}email` });
    case 'duplicate':
      return new ApiError('already_member', 'Adresse déjà présente plus haut dans ce lot : l’apprenant n’y est traité qu’une fois.', {
        param: `${field}email`,
      });
    case 'no_licence':
      return new ApiError('licence_unavailable');
  }
}

export type BulkEnrolmentAnswer = components['schemas']['BulkEnrolmentResponse'];

/** One learner: enrolled (`member`, `active` or `pending`), or an ApiError (400, 409). */
export async function enrolOne(db: DB, orgId: string, row: EnrolmentRequest): Promise<{ member: Member; status: 'active' | 'pending' }> {
  const rules = await loadEnrolmentRules(db, orgId, row.programme_slugs ?? []);
  const checked = checkRow(row, rules, '');
  if (checked.error) throw checked.error;
  const [outcome] = await enrolLearners(db, { orgId, candidates: [checked.candidate], atomic: false });
  if (outcome!.kind !== 'enrolled') throw outcomeError(outcome!, '');
  return { member: outcome!.member, status: outcome!.status };
}

/** A batch: a result per row, in order, best effort; `atomic`: all or nothing (400 or 409 refuses it whole). */
export async function enrolBatch(db: DB, orgId: string, rows: EnrolmentRequest[], atomic: boolean): Promise<BulkEnrolmentAnswer> {
  const rules = await loadEnrolmentRules(
    db,
    orgId,
    rows.flatMap((row) => row.programme_slugs ?? []),
  );
  const checked = rows.map((row, index) => checkRow(row, rules, `users[${index}].`));
  if (atomic) {
    const refused = checked.flatMap((row, index) => (row.error ? [`users[${index}] : ${row.error.message}`] : []));
    if (refused.length > 0) {
      const first = checked.find((row) => row.error)!.error!;
      throw new ApiError(first.code, `Lot atomique refusé, personne n’a été inscrit. ${refused.join(' ; ')}`, first.extraBody);
    }
  }
  const candidates = checked.flatMap((row) => (row.candidate ? [row.candidate] : []));
  let outcomes: EnrolmentOutcome[];
  try {
    outcomes = await enrolLearners(db, { orgId, candidates, atomic });
  } catch (error) {
    if (!(error instanceof InsufficientLicences)) throw error;
    throw new ApiError(
      'insufficient_licences',
      `Licences disponibles insuffisantes pour ce lot atomique : ${error.needed} nécessaire(s), ${error.available} disponible(s). Personne n’a été inscrit.`,
    );
  }
  const remaining = outcomes.values();
  const results = checked.map((row, index): BulkEnrolmentResult => {
    const outcome = row.error ? null : remaining.next().value!;
    if (outcome?.kind === 'enrolled') return { email: row.email, status: outcome.status, member_id: outcome.member.id };
    return { email: row.email, member_id: null, error: (row.error ?? outcomeError(outcome!, `users[${index}].`)).message };
  });
  const enrolled = results.filter((result) => result.status !== undefined).length;
  return { summary: { requested: results.length, enrolled, failed: results.length - enrolled }, results };
}
