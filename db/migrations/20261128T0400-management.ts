import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// The management API (/manage/v1) and the administrators' page behind it:
// - portal_links: single-use links a platform (or an operator) hands an administrator; only the
//   SHA-256 of a link's token is stored, and a link opens at most one session (redeemed_at).
// - portal_sessions: what a redeemed link opens, found by the SHA-256 of its cookie's value.
// - audit_events: every change made through the management API or the operator commands, and
//   every change refused to a page session, with who asked.
// - api_key_daily_usage: requests per key per Paris day, written by each server's in-memory tally
//   (src/key-usage.ts), not by the request itself: the key's statement stays the only one before a
//   verdict, and it writes only the unlogged rate-limit table.
// - api_keys.last_used_at, written by the same flush; in no index, so that its update stays HOT.
// - events.sample: the test pings and the examples sent to one endpoint, left out of the counts.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table portal_links (
    id uuid primary key default gen_random_uuid(),
    org_id uuid not null references organisations(id) on delete cascade,
    token_hash bytea not null unique,
    actor_email text not null check (actor_email = lower(btrim(actor_email)) and actor_email <> ''),
    read_only boolean not null,
    session_lifetime interval not null check (session_lifetime between interval '1 hour' and interval '7 days'),
    created_by text not null check (created_by in ('platform', 'operator')),
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    redeemed_at timestamptz
  )`.execute(db);
  await sql`create index portal_links_expiry_idx on portal_links (expires_at)`.execute(db);
  // An organisation's links, as revoking its sessions and the audit read them: its range, not the platform's.
  await sql`create index portal_links_org_idx on portal_links (org_id, created_at desc)`.execute(db);

  await sql`create table portal_sessions (
    id uuid primary key default gen_random_uuid(),
    org_id uuid not null references organisations(id) on delete cascade,
    link_id uuid not null unique references portal_links(id) on delete cascade,
    token_hash bytea not null unique,
    actor_email text not null,
    read_only boolean not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    ended_at timestamptz,
    end_reason text check (end_reason in ('logout', 'revoked', 'replaced')),
    check ((ended_at is null) = (end_reason is null))
  )`.execute(db);
  await sql`create index portal_sessions_live_idx on portal_sessions (org_id, actor_email) where ended_at is null`.execute(db);
  await sql`create index portal_sessions_expiry_idx on portal_sessions (expires_at)`.execute(db);

  await sql`create table audit_events (
    id bigint generated always as identity primary key,
    org_id uuid not null references organisations(id) on delete cascade,
    occurred_at timestamptz not null default clock_timestamp(),
    actor_kind text not null check (actor_kind in ('session', 'platform', 'operator')),
    actor_email text,
    session_id uuid references portal_sessions(id) on delete set null,
    action text not null,
    target_kind text check (target_kind in ('api_key', 'webhook_endpoint', 'webhook_delivery', 'portal_link', 'portal_session')),
    target_id uuid,
    outcome text not null check (outcome in ('succeeded', 'refused')),
    refusal_code text check ((outcome = 'refused') = (refusal_code is not null)),
    details jsonb not null default '{}',
    request_id text,
    client_address inet
  )`.execute(db);
  await sql`create index audit_events_org_idx on audit_events (org_id, id desc)`.execute(db);

  await sql`create table api_key_daily_usage (
    key_id uuid not null references api_keys(id) on delete cascade,
    day date not null,
    accepted integer not null default 0,
    rate_limited integer not null default 0,
    refused integer not null default 0,
    primary key (key_id, day)
  )`.execute(db);

  await sql`alter table api_keys add column last_used_at timestamptz`.execute(db);
  await sql`alter table events add column sample boolean not null default false`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table events drop column sample`.execute(db);
  await sql`alter table api_keys drop column last_used_at`.execute(db);
  await sql`drop table api_key_daily_usage`.execute(db);
  await sql`drop table audit_events`.execute(db);
  await sql`drop table portal_sessions`.execute(db);
  await sql`drop table portal_links`.execute(db);
}
