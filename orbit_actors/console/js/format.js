// How times, durations and counts read.

/** A timestamp (ms) in the browser's time zone, or in `timeZone` when given. */
export function when(ms, timeZone) {
  if (ms === null || ms === undefined) return "—";
  // dateStyle cannot be combined with timeZoneName, so the fields are spelled out
  const options = { year: "numeric", month: "short", day: "numeric", hour: "numeric",
    minute: "2-digit", second: "2-digit" };
  if (timeZone) Object.assign(options, { timeZone, timeZoneName: "short" });
  try {
    return new Intl.DateTimeFormat(undefined, options).format(new Date(ms));
  } catch {
    return new Date(ms).toISOString();
  }
}

/** A machine-readable <time> value. */
export function iso(ms) {
  return ms === null || ms === undefined ? "" : new Date(ms).toISOString();
}

/** A duration in ms as "850 ms", "2.5 s", "3 m 20 s", "2 h 5 m", "3 d 4 h". */
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} m ${Math.round(seconds % 60)} s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${minutes % 60} m`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** How long ago, roughly. */
export function ago(ms, now = Date.now()) {
  if (ms === null || ms === undefined) return "never";
  return `${duration(Math.max(0, now - ms))} ago`;
}

/** A count with thousands separators. */
export function count(n) {
  return new Intl.NumberFormat().format(n);
}
