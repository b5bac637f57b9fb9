/**
 * A user-agent string as a reader names the device: `Firefox 124 · Windows`. The report shows this
 * short form (one line per login instead of three); the full string stays in the `logins` resource.
 */
const systems: [RegExp, string][] = [
  [/iPhone/, 'iPhone'],
  [/iPad/, 'iPad'],
  [/Android/, 'Android'],
  [/CrOS/, 'ChromeOS'],
  [/Windows/, 'Windows'],
  [/Mac OS X|Macintosh/, 'macOS'],
  [/Linux/, 'Linux'],
];

// Order matters: Edge and Opera also say Chrome, Chrome also says Safari.
const browsers: [RegExp, string][] = [
  [/Edg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/OPR\/(\d+)/, 'Opera'],
  [/SamsungBrowser\/(\d+)/, 'Samsung Internet'],
  [/(?:Firefox|FxiOS)\/(\d+)/, 'Firefox'],
  [/(?:Chrome|CriOS)\/(\d+)/, 'Chrome'],
  [/Version\/(\d+)[^ ]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
];

const longest = 60;

export function describeUserAgent(userAgent: string | null): string | null {
  if (userAgent === null || userAgent.trim() === '') return null;
  const system = systems.find(([pattern]) => pattern.test(userAgent))?.[1];
  let browser: string | undefined;
  for (const [pattern, name] of browsers) {
    const match = pattern.exec(userAgent);
    if (match) {
      browser = `${name} ${match[1]}`;
      break;
    }
  }
  if (browser && system) return `${browser} · ${system}`;
  if (browser || system) return (browser ?? system)!;
  // Not a browser we know (a script, an app): its own words, cut to one line.
  const trimmed = userAgent.trim();
  return trimmed.length <= longest ? trimmed : `${trimmed.slice(0, longest - 1)}…`;
}
