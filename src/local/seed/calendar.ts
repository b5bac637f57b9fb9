/**
 * The generator's clock: days counted from 1 January of the first year, and minutes within a
 * Paris day. Activity happens between 07:00 and 23:59, away from the daylight-saving switch at
 * night, so a day's UTC offset taken at noon is exact for every generated instant; only New Year's
 * Eve runs past midnight (minutes beyond 24 h), and no clock changes that night.
 */
import { formatParisDate, parisOffsetMinutes } from '../../../db/paris-time';

/** The last minute of a day's activity, 23:59 (New Year's Eve aside). */
export const dayEnd = 23 * 60 + 59;

export class ParisCalendar {
  /** UTC milliseconds of each day's Paris midnight. */
  private readonly midnights: number[] = [];
  /** 'YYYY-MM-DD' of each day. */
  private readonly dates: string[];
  readonly days: number;

  /** The whole Paris days from 1 January of `firstYear` to `until`. */
  constructor(
    readonly firstYear: number,
    until: Date,
  ) {
    const midnightOf = (day: number) =>
      Date.UTC(firstYear, 0, 1 + day) - parisOffsetMinutes(new Date(Date.UTC(firstYear, 0, 1 + day, 12))) * 60_000;
    // Whole days only: a day is in when it has ended by `until` (no activity after `until`).
    for (let day = 0; midnightOf(day + 1) <= until.getTime(); day++) this.midnights.push(midnightOf(day));
    this.days = this.midnights.length;
    // Formatted once: the generator asks for them at every sitting and quiz answer.
    this.dates = this.midnights.map((midnight) => formatParisDate(new Date(midnight + 12 * 3_600_000)));
  }

  /** The instant of a minute of a Paris day (minute 0 = midnight). */
  at(day: number, minute: number): Date {
    return new Date(this.midnights[day]! + minute * 60_000);
  }

  /** 'YYYY-MM-DD' of a day of the calendar. */
  date(day: number): string {
    return this.dates[day]!;
  }

  /** 'YYYY-MM-DD' of a minute of a day (the next day's, past midnight). */
  dateAt(day: number, minute: number): string {
    return this.date(day + Math.floor(minute / (24 * 60)));
  }

  /** The day of a calendar date (month 1 to 12); it may lie outside the calendar. */
  dayOf(year: number, month: number, dayOfMonth: number): number {
    return Math.round((Date.UTC(year, month - 1, dayOfMonth) - Date.UTC(this.firstYear, 0, 1)) / 86_400_000);
  }

  /** 31 December: the evening whose activity may run into the next year. */
  isNewYearsEve(day: number): boolean {
    return this.date(day).endsWith('-12-31');
  }

  /** Day of the week, 0 = Monday. */
  weekday(day: number): number {
    return (new Date(Date.UTC(this.firstYear, 0, 1 + day)).getUTCDay() + 6) % 7;
  }
}
