// Scenes: the shape shared by the setup handler, the form validator and the prompt segment.

export const MOODS = ["calm", "tense", "festive", "eerie"];
export const TIMES = ["dawn", "noon", "dusk", "night"];
export const MAX_PLACE = 80;
export const MAX_DETAILS = 400;

const OPENINGS = [
  { place: "The harbor market", details: "Stalls of salt fish and rope; gulls argue over scraps." },
  { place: "The lighthouse stair", details: "Wet stone steps wind upward; the lamp above has gone dark." },
  { place: "The Drowned Lantern inn", details: "A low room of smoke and dice, with a fire that never quite warms." },
];

function pick(list, draw) {
  return list[Math.min(list.length - 1, Math.floor(draw() * list.length))];
}

export function openingScene(draw) {
  const opening = pick(OPENINGS, draw);
  return { ...opening, mood: pick(MOODS, draw), time: pick(TIMES, draw) };
}

/** Problems with a scene the player sent, as [{ field, message }]; empty when valid. */
export function sceneProblems(values) {
  const problems = [];
  const place = typeof values?.place === "string" ? values.place.trim() : "";
  if (!place) problems.push({ field: "place", message: "Name the place." });
  else if (place.length > MAX_PLACE) problems.push({ field: "place", message: `Keep the place under ${MAX_PLACE} characters.` });
  if (values?.mood !== undefined && !MOODS.includes(values.mood)) {
    problems.push({ field: "mood", message: `Mood is one of ${MOODS.join(", ")}.` });
  }
  if (values?.time !== undefined && !TIMES.includes(values.time)) {
    problems.push({ field: "time", message: `Time is one of ${TIMES.join(", ")}.` });
  }
  if (typeof values?.details === "string" && values.details.length > MAX_DETAILS) {
    problems.push({ field: "details", message: `Keep the details under ${MAX_DETAILS} characters.` });
  }
  return problems;
}

/** The scene a (valid) form answer describes: trimmed, optional parts left out when empty. */
export function sceneFromForm(values) {
  const scene = { place: values.place.trim() };
  if (MOODS.includes(values.mood)) scene.mood = values.mood;
  if (TIMES.includes(values.time)) scene.time = values.time;
  const details = typeof values.details === "string" ? values.details.trim() : "";
  if (details) scene.details = details;
  return scene;
}

export function briefOf(scene) {
  if (!scene || typeof scene.place !== "string") return null;
  const when = scene.time ? ` at ${scene.time}` : "";
  const mood = scene.mood ? ` The mood is ${scene.mood}.` : "";
  const details = scene.details ? ` ${scene.details}` : "";
  return `Current scene: ${scene.place}${when}.${mood}${details}`;
}
