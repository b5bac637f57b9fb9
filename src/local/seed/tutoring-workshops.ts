import { dayEnd } from './calendar';
import type { Programme } from './organisation-catalogue';
import type { Learner } from './simulation-state';
import * as words from './vocabulary';

/**
 * Fortnightly tutoring workshops of the programme while the learner follows it, and the evening
 * workshop of New Year's Eve, which ends past midnight (its attendance and connected time belong
 * to the year it started in).
 */
export function attendWorkshops(learner: Learner, programme: Programme, fromDay: number, untilDay: number): void {
  const { calendar } = learner.world;
  // Even programmes meet on Tuesdays at 14:00 for 90 minutes, odd ones on Thursdays at 18:00 for 60.
  const weekday = programme.index % 2 === 0 ? 1 : 3;
  const [minute, planned] = programme.index % 2 === 0 ? [14 * 60, 90] : [18 * 60, 60];
  let day = fromDay + 1;
  while (day < untilDay && calendar.weekday(day) !== weekday) day++;
  for (; day < untilDay; day += 14) attend(learner, programme, day, minute, planned, null);
  for (let eve = fromDay + 1; eve < untilDay; eve++) {
    if (calendar.isNewYearsEve(eve) && eve + 1 < calendar.days && learner.r.chance(learner.story === 'ordinary' ? 0.5 : 1)) {
      attend(learner, programme, eve, 23 * 60, 90, 'Veillée de fin d’année');
    }
  }
}

/** Attendance of one workshop: present or not, connected time, signatures, perhaps a rating. */
function attend(learner: Learner, programme: Programme, day: number, minute: number, planned: number, topic: string | null): void {
  const { r, world, person } = learner;
  const { calendar, out, orgId } = world;
  if (learner.tutoringDays.has(`${day}:${minute}`)) return;
  learner.tutoringDays.add(`${day}:${minute}`);
  const session = world.session(programme, day, minute, planned, topic);
  const present = r.chance(0.85);
  const late = present ? r.int(0, 10) : 0;
  const connected = present ? Math.max(15, planned - late - r.int(0, 10)) : 0;
  const attendanceId = world.ids.uuid();
  out.tutoring_attendance.add(
    attendanceId,
    orgId,
    session.id,
    person.membershipId,
    present,
    connected,
    present && r.chance(0.92),
    present && r.chance(0.97),
    session.startsAt,
    session.title,
    session.programmeId,
    person.email,
  );
  if (!present) return;
  // The tutoring interval is exactly the connected time, so temps_tutorat_min fits in temps_actif_min.
  out.activity_intervals.add(
    orgId,
    person.membershipId,
    'tutorat',
    calendar.at(day, minute + late),
    calendar.at(day, minute + late + connected),
    programme.id,
    null,
    attendanceId,
    false,
  );
  if (!learner.studyDays.has(day)) learner.login(day, minute + late - r.int(0, 3), minute + late + connected + r.int(0, 3));
  if (r.chance(0.5)) rateWorkshop(learner, session.id, day, minute + planned);
}

/** A rating of the workshop ended at `endMinute`, within hours; legacy imports have no session rating. */
function rateWorkshop(learner: Learner, sessionId: string, day: number, endMinute: number): void {
  const { r, world, person } = learner;
  const legacy = day < world.legacyUntilDay;
  world.out.tutoring_ratings.add(
    world.ids.uuid(),
    world.orgId,
    person.membershipId,
    sessionId,
    legacy
      ? null
      : r.weighted([
          [5, 45],
          [4, 35],
          [3, 14],
          [2, 4],
          [1, 2],
        ] as const),
    r.weighted([
      [5, 50],
      [4, 33],
      [3, 12],
      [2, 3],
      [1, 2],
    ] as const),
    r.chance(0.35) ? r.pick(words.tutoringComments) : null,
    world.calendar.at(day, Math.max(endMinute + 5, Math.min(dayEnd, endMinute + r.int(5, 240)))),
  );
}
