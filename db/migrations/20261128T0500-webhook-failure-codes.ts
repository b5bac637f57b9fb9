import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// Each failed webhook attempt gets a stable code beside its French sentence (`error_code`), as the
// API's errors do: what a program reading the delivery log tests. The attempts already logged get
// theirs from their status and their sentence.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table webhook_attempts add column error_code text
    check (error_code in ('http_status', 'timeout', 'address_refused', 'dns_failure', 'connection_refused',
      'connection_reset', 'tls_error', 'connection_error'))`.execute(db);
  await sql`update webhook_attempts set error_code = case
      when status_code is not null then 'http_status'
      when error like 'délai de réponse dépassé%' then 'timeout'
      when error like 'adresse refusée%' then 'address_refused'
      when error like '%ENOTFOUND%' or error like '%EAI_AGAIN%' then 'dns_failure'
      when error like '%ECONNREFUSED%' then 'connection_refused'
      when error like '%ECONNRESET%' or error like '%EPIPE%' or error like '%socket hang up%' then 'connection_reset'
      when error ~ '(CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY)' then 'tls_error'
      else 'connection_error'
    end
    where not succeeded`.execute(db);
  // A failure has its code, a success none.
  await sql`alter table webhook_attempts add constraint webhook_attempts_failure_has_code
    check ((error_code is null) = succeeded)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table webhook_attempts drop column error_code`.execute(db);
}
