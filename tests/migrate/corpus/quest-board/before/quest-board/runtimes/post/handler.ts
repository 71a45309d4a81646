import { normaliseTitle } from "./rules.js";

interface Payload {
  title?: string;
}

export default async function post(ctx: { payload?: Payload }): Promise<{ title: string }> {
  return { title: normaliseTitle(ctx.payload?.title ?? "untitled") };
}
