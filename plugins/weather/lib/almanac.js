// A fixed almanac so the package is useful, and testable, without the network.

const ALMANAC = {
  harbor: { sky: "fog", temperatureC: 11, wind: "light onshore breeze" },
  saltmere: { sky: "drizzle", temperatureC: 9, wind: "gusty from the west" },
  highcrest: { sky: "clear", temperatureC: -2, wind: "still" },
  emberfall: { sky: "ash haze", temperatureC: 27, wind: "hot and dry" },
};

const FALLBACK = { sky: "overcast", temperatureC: 14, wind: "variable" };

export function normaliseCity(value) {
  const text = typeof value === "string" ? value.replace(/\s+/g, " ").trim() : "";
  return text.slice(0, 60) || "Harbor";
}

/** The report for a city; unknown cities get a mild default, marked as such. */
export function reportFor(city) {
  const name = normaliseCity(city);
  const entry = ALMANAC[name.toLowerCase()];
  const base = entry ?? FALLBACK;
  return {
    city: name,
    sky: base.sky,
    temperatureC: base.temperatureC,
    wind: base.wind,
    known: Boolean(entry),
    summary: `${name}: ${base.sky}, ${base.temperatureC} °C, ${base.wind}.`,
  };
}
