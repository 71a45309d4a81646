// Item ids and changes shared by the satchel service.

export const ITEM_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** A stable id from an item name: "Iron Key" -> "iron-key". */
export function itemIdFor(name) {
  return String(name)
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
}
