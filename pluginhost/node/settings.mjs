// The host's own settings: the COVEL_HOST_* variables the supervisor (pluginhost/host.py) sets,
// read once here and removed from process.env before any other module of the host runs, so no
// plugin ever sees them.
import { takeHostSettings } from "./contain.mjs";

export const SETTINGS = takeHostSettings();
export const IN_FD = Number(SETTINGS.COVEL_HOST_IN_FD ?? 3);
export const OUT_FD = Number(SETTINGS.COVEL_HOST_OUT_FD ?? 4);
export const TRUST = SETTINGS.COVEL_HOST_TRUST === "community" ? "community" : "bundled";
// The largest frame the host sends (a result, a callback's parameters); Python refuses bigger.
export const MAX_FRAME_BYTES = Number(SETTINGS.COVEL_HOST_MAX_FRAME_BYTES ?? 8 * 1024 * 1024);
export const MAX_LOG_CHARS = 8192; // one log line; longer ones are cut
export const LOG_RATE = Number(SETTINGS.COVEL_HOST_LOG_LINES_PER_S ?? 200); // per package, burst 2x
// Deeper JSON than this is refused before it leaves the host: Python's json module recurses per
// level and gives up near 1,000 (a RecursionError), while V8 writes far deeper values happily.
export const MAX_DEPTH = Number(SETTINGS.COVEL_HOST_MAX_DEPTH ?? 200);
