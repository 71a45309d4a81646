export default async function listen(ctx) {
  const event = ctx.triggerEvent;
  if (!event) return { outcome: "failed", error: "listen ran without the event that woke it" };
  return {
    outcome: "success",
    value: { topic: event.topic, data: event.data, payload: event.payload, source: event.source },
  };
}
