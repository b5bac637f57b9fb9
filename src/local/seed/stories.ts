import type { ParisCalendar } from './calendar';
import type { Random } from './random';

/*
 * Stories the generator tells on purpose, so that every case where a year boundary matters is in
 * the data of every seeded organisation (docs/decisions.md#year-period): the first three learners
 * tell one each, and a few others at random. Ordinary learners follow their random pace.
 * - `acrossThreeYears`: enrolled in November of the first year, a visit on each New Year's Eve that
 *   runs past midnight, slow progress through the middle year, the certificate in January of the
 *   last year: one enrolment with rows in three calendar years.
 * - `newYearFinisher`: enrolled in September, most of the programme before New Year, a visit and
 *   the evening workshop across midnight, the certificate in January.
 * - `dormantYear`: a programme followed in the first year, nothing at all in the middle year, another
 *   programme in the last year.
 */
export type Story = 'ordinary' | 'acrossThreeYears' | 'newYearFinisher' | 'dormantYear';

const toldOnPurpose: Story[] = ['acrossThreeYears', 'newYearFinisher', 'dormantYear'];

/** The story of the learner at `index`: the three stories first, then one learner in twenty or so. */
export function storyOf(index: number, random: Random): Story {
  if (index < toldOnPurpose.length) return toldOnPurpose[index]!;
  return random.chance(0.06) ? random.pick(toldOnPurpose) : 'ordinary';
}

/** How often a learner sits down to study a programme, and how many lesson visits each time. */
export interface Pace {
  /** The first day of study. */
  first: number;
  /** Lesson visits of the next sitting. */
  visits(): number;
  /** The day of the sitting after the one of `day`, or null when the learner stops. */
  next(day: number, sittings: number): number | null;
}

/** One programme of a learner: enrolled on `startDay`, studied before `until` at its pace (null: the learner's own). */
export interface ProgrammePlan<P> {
  programme: P;
  startDay: number;
  until: number;
  pace: Pace | null;
}

interface PlannedProgramme {
  lessons: readonly unknown[];
  template: { tutored: boolean };
}

/**
 * Sittings on given days with given visits, then, once they are used up, a sitting every two to
 * four days until the programme is done; never stops early.
 */
function plannedPace(sittings: { day: number; visits: number }[], random: Random): Pace {
  let current = 0;
  return {
    first: sittings[0]!.day,
    visits: () => sittings[current]?.visits ?? random.int(1, 2),
    next(day) {
      current++;
      const planned = sittings[current]?.day;
      return planned !== undefined && planned > day ? planned : day + random.int(2, 4);
    },
  };
}

/** Days from `from` (excluded) to `to` (excluded), `step` apart at random, each with one visit. */
function sittingsBetween(from: number, to: number, step: [number, number], random: Random): { day: number; visits: number }[] {
  const sittings = [];
  for (let day = from + random.int(step[0], step[1]); day < to; day += random.int(step[0], step[1])) sittings.push({ day, visits: 1 });
  return sittings;
}

/** `count` sittings spread evenly from `from` to `to`, one visit each. */
function spreadSittings(from: number, to: number, count: number): { day: number; visits: number }[] {
  return Array.from({ length: count }, (_, i) => ({ day: from + Math.floor(((to - from) * i) / Math.max(1, count)), visits: 1 }));
}

/**
 * The programmes of a learner with a story told on purpose, in enrolment order. The calendar covers
 * three years from `calendar.firstYear`; a story whose days have not come yet stops at the data's end.
 */
export function plannedProgrammes<P extends PlannedProgramme>(
  story: Exclude<Story, 'ordinary'>,
  calendar: ParisCalendar,
  programmes: readonly P[],
  random: Random,
): ProgrammePlan<P>[] {
  const first = calendar.firstYear;
  const last = first + 2;
  const end = calendar.days;
  const tutored = programmes.filter((p) => p.template.tutored);
  const eve = (year: number) => calendar.dayOf(year, 12, 31);
  switch (story) {
    case 'acrossThreeYears': {
      const programme = random.pick(tutored);
      const startDay = calendar.dayOf(first, 11, random.int(12, 20));
      const firstWinter = sittingsBetween(startDay, eve(first) - 1, [6, 8], random);
      // Three lessons are left for January of the last year.
      const middleYear = Math.max(2, programme.lessons.length - 3 - firstWinter.length - 2);
      const sittings = [
        ...firstWinter,
        { day: eve(first), visits: 1 },
        ...spreadSittings(calendar.dayOf(first + 1, 1, 12), calendar.dayOf(first + 1, 12, 20), middleYear),
        { day: eve(first + 1), visits: 1 },
        { day: calendar.dayOf(last, 1, 4), visits: 1 },
      ];
      return [{ programme, startDay, until: end, pace: plannedPace(sittings, random) }];
    }
    case 'newYearFinisher': {
      // The latest New Year with January behind it.
      const year = calendar.dayOf(last, 2, 1) < end ? last : last - 1;
      const programme = random.pick(tutored);
      const startDay = calendar.dayOf(year - 1, 9, random.int(5, 15));
      const autumn = sittingsBetween(startDay, eve(year - 1) - 1, [4, 6], random);
      // All but three lessons before New Year's Eve, spread over the autumn's sittings.
      const beforeEve = programme.lessons.length - 3;
      autumn.forEach((sitting, i) => {
        sitting.visits = Math.floor((beforeEve * (i + 1)) / autumn.length) - Math.floor((beforeEve * i) / autumn.length);
      });
      const sittings = [
        ...autumn.filter((s) => s.visits > 0),
        { day: eve(year - 1), visits: 1 },
        { day: calendar.dayOf(year, 1, 3), visits: 1 },
      ];
      return [{ programme, startDay, until: end, pace: plannedPace(sittings, random) }];
    }
    case 'dormantYear': {
      const [before, after] = random.sample(programmes, 2) as [P, P];
      return [
        { programme: before, startDay: calendar.dayOf(first, 2, random.int(1, 25)), until: calendar.dayOf(first, 10, 1), pace: null },
        { programme: after, startDay: calendar.dayOf(last, 2, random.int(1, 25)), until: end, pace: null },
      ];
    }
  }
}
