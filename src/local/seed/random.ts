/**
 * A small seeded pseudo-random generator (mulberry32): the same seed gives the same sequence on
 * every machine, which is what makes the generator deterministic.
 */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One of the items, with the given relative weights. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((sum, [, weight]) => sum + weight, 0);
    let draw = this.next() * total;
    for (const [item, weight] of items) {
      draw -= weight;
      if (draw < 0) return item;
    }
    return items[items.length - 1]![0];
  }

  /** Roughly normal (sum of three uniforms), clamped to [min, max] and rounded. */
  around(mean: number, spread: number, min: number, max: number): number {
    const value = mean + spread * (this.next() + this.next() + this.next() - 1.5) * 1.15;
    return Math.min(max, Math.max(min, Math.round(value)));
  }

  /** `count` distinct items, in a random order. */
  sample<T>(items: readonly T[], count: number): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, count);
  }

  /** A version-4-shaped UUID drawn from the sequence. */
  uuid(): string {
    const hex = (n: number) =>
      Math.floor(this.next() * 16 ** n)
        .toString(16)
        .padStart(n, '0');
    const variant = (8 + Math.floor(this.next() * 4)).toString(16);
    return `${hex(8)}-${hex(4)}-4${hex(3)}-${variant}${hex(3)}-${hex(6)}${hex(6)}`;
  }

  /** An independent generator derived from this one (a stream per learner keeps them apart). */
  fork(): Random {
    return new Random(Math.floor(this.next() * 4294967296));
  }
}

/** A 32-bit hash of a text, to derive seeds from names. */
export function hashText(text: string): number {
  let hash = 2166136261;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 16777619);
  }
  return hash >>> 0;
}
