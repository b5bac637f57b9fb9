import type { ParisCalendar } from './calendar';
import { trainerNames } from './catalogue';
import type { LearnerTables } from './generated-tables';
import type { Identity } from './learner-identities';
import type { Programme } from './organisation-catalogue';
import type { Random } from './random';
import type { Story } from './stories';

export interface SessionSlot {
  id: string;
  attendees: number;
  startsAt: Date;
  title: string;
  programmeId: string;
}
/** How a learner studies: pace (days between sessions), skill, drop-out risk, lab use, devices. */
export interface Traits {
  gap: number;
  skill: number;
  dropRate: number;
  labUser: boolean;
  agents: (string | null)[];
  ips: string[];
}

interface Login {
  start: Date;
  end: Date | null;
  ip: string;
  agent: string | null;
}

/** What the simulations share: the calendar, the catalogue, the buffers and the tutoring groups. */
export class World {
  readonly licencesUsed = { standard: 0, tutorat: 0 };
  /** Ratings of sessions before this day are legacy imports, without a session rating. */
  readonly legacyUntilDay: number;
  private readonly sessions = new Map<string, SessionSlot[]>();

  constructor(
    readonly orgId: string,
    readonly calendar: ParisCalendar,
    readonly programmes: Programme[],
    readonly out: LearnerTables,
    readonly ids: Random,
  ) {
    this.legacyUntilDay = calendar.dayOf(calendar.firstYear + 1, 1, 1) + 120;
  }

  /** A workshop group of the programme at that time with a free seat (groups of twelve); `topic` by default follows the fortnight. */
  session(programme: Programme, day: number, minute: number, planned: number, topic: string | null): SessionSlot {
    const key = `${programme.index}:${day}:${minute}`;
    const groups = this.sessions.get(key) ?? [];
    this.sessions.set(key, groups);
    let group = groups.find((g) => g.attendees < 12);
    if (!group) {
      const topicTitle = topic ?? programme.moduleTopics[Math.floor(day / 14) % programme.moduleTopics.length]!;
      const number = groups.length + 1;
      group = {
        id: this.ids.uuid(),
        attendees: 0,
        startsAt: this.calendar.at(day, minute),
        title: `Atelier tutoré — ${topicTitle}${number > 1 ? ` (groupe ${number})` : ''}`,
        programmeId: programme.id,
      };
      groups.push(group);
      this.out.tutoring_sessions.add(
        group.id,
        this.orgId,
        group.programmeId,
        group.title,
        group.startsAt,
        planned,
        trainerNames[(programme.index * 3 + number) % trainerNames.length],
      );
    }
    group.attendees++;
    return group;
  }
}

/**
 * The learner being simulated, as every part of the simulation sees them: who they are, their story
 * and random stream, how they study, and the days and logins taken so far.
 */
export class Learner {
  /** Days with a sitting or a short login: one a day at most. */
  readonly studyDays = new Set<number>();
  /** Workshops attended, by day and minute. */
  readonly tutoringDays = new Set<string>();
  readonly logins: Login[] = [];
  traits: Traits = { gap: 1, skill: 0.5, dropRate: 0, labUser: false, agents: [null], ips: [] };

  constructor(
    readonly world: World,
    readonly person: Identity,
    readonly story: Story,
    readonly r: Random,
  ) {}

  /** A login from a minute of a day to another (past midnight when the minute is beyond 24 h). */
  login(day: number, startMinute: number, endMinute: number): void {
    const ip = this.r.chance(0.8) ? this.traits.ips[0]! : this.r.pick(this.traits.ips);
    this.logins.push({
      start: this.world.calendar.at(day, startMinute),
      end: this.world.calendar.at(day, endMinute),
      ip,
      agent: this.r.pick(this.traits.agents),
    });
  }

  /** Now and then a short login without study on `day` (checking a date, a document), when it is free and before `until`. */
  perhapsQuickLogin(day: number, until: number): void {
    const { r } = this;
    if (!(r.chance(0.3) && day < until && !this.studyDays.has(day))) return;
    this.studyDays.add(day);
    const quick = r.int(8 * 60, 21 * 60);
    this.login(day, quick, quick + r.int(1, 8));
  }
}
