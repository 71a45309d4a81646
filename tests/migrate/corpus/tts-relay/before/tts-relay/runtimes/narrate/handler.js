export default async function handler(ctx) {
  return { outcome: "success", value: { clips: [] } };
}
