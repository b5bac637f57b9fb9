import type { Identity } from './learner-identities';
import type { Programme } from './organisation-catalogue';
import { studyProgramme } from './programme-study';
import type { Random } from './random';
import { Learner, type Traits, type World } from './simulation-state';
import { type Pace, type ProgrammePlan, plannedProgrammes, type Story } from './stories';
import { attendWorkshops } from './tutoring-workshops';
import * as words from './vocabulary';

/** A learner's membership as drawn: its state, its dates, and how long the learner may study. */
interface Membership {
  status: 'actif' | 'invité' | 'suspendu';
  /** The programmes of a story told on purpose; null for an ordinary learner. */
  storyPlans: ProgrammePlan<Programme>[] | null;
  joinDay: number;
  invitedAt: Date | null;
  joinedAt: Date | null;
  /** The membership's first date: the invitation, else the join. */
  since: Date;
  suspendedDay: number | null;
  /** Whether the learner studies at all (never when only invited, and a few who joined never do). */
  active: boolean;
  /** Study happens on whole days before this one: the suspension, if any, else the data's end. */
  activityEnd: number;
}

/** What one learner does, from enrolment to today: every row of theirs goes to the buffers. */
export class LearnerSimulation {
  private readonly learner: Learner;

  constructor(world: World, person: Identity, story: Story, r: Random) {
    this.learner = new Learner(world, person, story, r);
  }

  /** The learner joins, enrols in a few programmes and follows each; then their account as the story left it. Draw order is fixed: same seed, same data. */
  run(): void {
    const membership = this.joinOrganisation();
    const plans = this.choosePlans(membership);
    const tutored =
      this.learner.story === 'ordinary'
        ? plans.some((p) => p.programme.template.tutored) && this.learner.r.chance(0.35)
        : plans.some((p) => p.programme.template.tutored);
    this.learner.traits = this.drawTraits();
    plans.forEach((plan, order) => {
      this.followProgramme(plan, order, membership, tutored);
    });
    this.recordAccount(membership, tutored);
  }

  /** The membership's state and dates: invited, joined, perhaps suspended; a story sets the join day. */
  private joinOrganisation(): Membership {
    const { r, world } = this.learner;
    const { calendar } = world;
    const lastDay = calendar.days - 1;
    const ordinary = this.learner.story === 'ordinary';
    const status = ordinary
      ? r.weighted([
          ['actif', 82],
          ['invité', 10],
          ['suspendu', 8],
        ] as const)
      : 'actif';
    // A few learners of the first year; the others over the last two years, as a live platform.
    const recentFrom = calendar.dayOf(calendar.firstYear + 1, 1, 1);
    const storyPlans = this.learner.story === 'ordinary' ? null : plannedProgrammes(this.learner.story, calendar, world.programmes, r);
    const joinDay =
      storyPlans?.[0]?.startDay ??
      (status === 'invité'
        ? r.int(Math.max(0, lastDay - 150), lastDay)
        : r.chance(0.12)
          ? r.int(0, recentFrom - 1)
          : r.int(recentFrom, Math.max(recentFrom, lastDay - 14)));
    const invitedFirst = status === 'invité' || r.chance(0.75);
    const inviteDay = invitedFirst ? (status === 'invité' ? joinDay : Math.max(0, joinDay - r.int(0, 6))) : null;
    const inviteMinute = r.int(8 * 60, 18 * 60);
    const joinMinute = inviteDay === joinDay ? Math.min(22 * 60, inviteMinute + r.int(5, 240)) : r.int(8 * 60, 20 * 60);
    const invitedAt = inviteDay === null ? null : calendar.at(inviteDay, inviteMinute);
    const joinedAt = status === 'invité' ? null : calendar.at(joinDay, joinMinute);
    const suspendedDay = status === 'suspendu' ? Math.min(lastDay, joinDay + r.int(20, 300)) : null;
    const active = status !== 'invité' && !(ordinary && status === 'actif' && r.chance(0.04));
    return {
      status,
      storyPlans,
      joinDay,
      invitedAt,
      joinedAt,
      since: (invitedAt ?? joinedAt)!,
      suspendedDay,
      active,
      activityEnd: suspendedDay ?? calendar.days,
    };
  }

  /** The programmes the learner enrols in: the story's, else one to three by popularity, the first on the join day. */
  private choosePlans(membership: Membership): ProgrammePlan<Programme>[] {
    const { r, world } = this.learner;
    const { joinDay, activityEnd } = membership;
    return (
      membership.storyPlans ??
      r
        .sample(
          world.programmes.flatMap((p) => Array.from({ length: p.template.popularity }, () => p)),
          20,
        )
        .filter((p, i, all) => all.indexOf(p) === i)
        .slice(
          0,
          r.weighted([
            [1, 40],
            [2, 35],
            [3, 25],
          ] as const),
        )
        .map((programme, order) => ({
          programme,
          startDay: order === 0 ? joinDay : joinDay + r.int(15, 200),
          until: activityEnd,
          pace: null,
        }))
    );
  }

  /** How the learner studies (see Traits), and their devices and addresses. */
  private drawTraits(): Traits {
    const { r } = this.learner;
    const ordinary = this.learner.story === 'ordinary';
    return {
      gap: r.pick([1, 2, 3, 4, 6, 9]),
      skill: 0.45 + r.next() * 0.5,
      dropRate: ordinary ? r.pick([0.003, 0.008, 0.015, 0.04]) : 0.003,
      labUser: !ordinary || r.chance(0.5),
      agents: r.sample(words.userAgents, r.int(1, 2)).map((agent) => (r.chance(0.02) ? null : agent)),
      ips: Array.from({ length: r.int(1, 3) }, () => this.ip()),
    };
  }

  /** One programme of the learner: the enrolment, the PIF, then (an active learner) study and tutoring. */
  private followProgramme(plan: ProgrammePlan<Programme>, order: number, membership: Membership, tutored: boolean): void {
    const { r, world, person } = this.learner;
    const { programme, startDay } = plan;
    const { status, activityEnd } = membership;
    if (order > 0 && (startDay >= activityEnd - 7 || status === 'invité')) return;
    const enrolledAt = order === 0 ? membership.since : world.calendar.at(startDay, r.int(8 * 60, 19 * 60));
    world.out.programme_enrolments.add(world.ids.uuid(), world.orgId, person.membershipId, programme.id, enrolledAt);
    if (status === 'invité') return;
    this.issuePif(programme, startDay);
    if (!membership.active) return;
    const until = Math.min(plan.until, activityEnd);
    const studiedUntil = studyProgramme(this.learner, programme, plan.pace ?? this.ordinaryPace(startDay), until);
    if (tutored && programme.template.tutored) attendWorkshops(this.learner, programme, startDay, Math.min(studiedUntil + 1, until));
  }

  /** The PIF (individual training plan) of a programme, within days of its start, with its estimated hours. */
  private issuePif(programme: Programme, startDay: number): void {
    const { r, world, person } = this.learner;
    const { calendar } = world;
    const pifDay = startDay + r.int(0, 2);
    if (pifDay > calendar.days - 1) return;
    const estimated = programme.lessons.reduce((sum, lesson) => sum + lesson.estimatedMinutes, 0) / 60;
    world.out.documents.add(
      world.ids.uuid(),
      world.orgId,
      person.membershipId,
      programme.id,
      'PIF',
      calendar.at(pifDay, r.int(8 * 60, 19 * 60)),
      Math.round(estimated * 2) / 2,
      null,
    );
  }

  /** The learner's logins, account, membership and licence, in the state their story left them in. */
  private recordAccount(membership: Membership, tutored: boolean): void {
    const { r, world, person } = this.learner;
    const { calendar, out, orgId } = world;
    const { status, since, suspendedDay } = membership;
    const lastDay = calendar.days - 1;
    this.learner.logins.sort((a, b) => a.start.getTime() - b.start.getTime());
    const firstLogin = this.learner.logins[0]?.start ?? null;
    const last = this.learner.logins[this.learner.logins.length - 1];
    if (last && status === 'actif' && last.start.getTime() > calendar.at(Math.max(0, lastDay - 6), 0).getTime() && r.chance(0.2))
      last.end = null;
    for (const login of this.learner.logins) out.logins.add(orgId, person.membershipId, login.start, login.end, login.ip, login.agent);
    const name = status === 'invité' && r.chance(0.8) ? null : person.name;
    out.accounts.add(person.accountId, person.email, name, since, firstLogin);
    out.memberships.add(
      person.membershipId,
      orgId,
      person.accountId,
      status,
      membership.invitedAt,
      membership.joinedAt,
      since,
      person.email,
      name,
    );
    const licenceStatus = status === 'suspendu' ? 'révoquée' : firstLogin ? 'activée' : 'attribuée';
    out.licences.add(
      orgId,
      tutored ? 'tutorat' : 'standard',
      licenceStatus,
      person.membershipId,
      since,
      firstLogin,
      suspendedDay === null ? null : calendar.at(suspendedDay, r.int(9 * 60, 18 * 60)),
      since,
    );
    world.licencesUsed[tutored ? 'tutorat' : 'standard']++;
  }

  private ip(): string {
    const { r } = this.learner;
    if (r.chance(0.1)) {
      const hex = () => r.int(0, 0xffff).toString(16);
      return `2a01:cb${r.int(0, 0xff).toString(16).padStart(2, '0')}:${hex()}:${hex()}::${hex()}`;
    }
    const [a, b] = r.pick(words.ipv4Prefixes);
    return `${a}.${b + r.int(0, 63)}.${r.int(0, 255)}.${r.int(1, 254)}`;
  }

  /** The ordinary learner's rhythm: a session every few days, one to three lessons each, and a risk of dropping out. */
  private ordinaryPace(startDay: number): Pace {
    const { r, traits } = this.learner;
    return {
      first: startDay + r.int(0, 2),
      visits: () => r.int(1, 3),
      next: (day, sessions) => (r.chance(traits.dropRate * (1 + sessions / 20)) ? null : day + r.int(1, traits.gap * 2)),
    };
  }
}
