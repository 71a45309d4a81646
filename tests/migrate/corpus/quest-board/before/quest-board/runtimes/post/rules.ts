export function normaliseTitle(title: string): string {
  return title.trim().slice(0, 80);
}
