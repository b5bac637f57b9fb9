/**
 * What a start is still waiting for, said on stderr while it lasts: a start usually takes a few
 * seconds, and one that hangs (a database that accepts connections and never answers, a migration
 * waiting behind another instance's, a render worker that does not warm up) must say on what,
 * instead of leaving the operator, or a test harness, before a silent terminal.
 */
export interface StartPhases {
  /** `step`, named in the reports while it is under way (`name` with its article: « la migration du schéma »). */
  track<T>(name: string, step: Promise<T>): Promise<T>;
  /** The start is over: no more reports. */
  done(): void;
}

/** A start still under way after this long is reported, and again at each further interval. */
export const startReportIntervalMs = 10_000;

/** How each report begins: `Démarrage toujours en cours après 20 s, en attente de : …`. */
export const startReportPrefix = 'Démarrage toujours en cours après ';

export function watchStartPhases(write: (line: string) => void = (line) => process.stderr.write(line)): StartPhases {
  const startedAt = performance.now();
  const pending = new Map<number, string>();
  let nextId = 0;
  const timer = setInterval(() => {
    const elapsed = Math.round((performance.now() - startedAt) / 1000);
    const waitingFor = [...pending.values()];
    write(`${startReportPrefix}${elapsed} s, en attente de : ${waitingFor.length > 0 ? waitingFor.join(' ; ') : 'la fin du démarrage'}\n`);
  }, startReportIntervalMs);
  // The reports never keep a process alive on their own.
  timer.unref();
  return {
    track(name, step) {
      const id = nextId++;
      pending.set(id, name);
      const forget = () => pending.delete(id);
      step.then(forget, forget);
      return step;
    },
    done() {
      clearInterval(timer);
    },
  };
}
