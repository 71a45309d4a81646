/**
 * Unified server entry (PLUGIN.md `entry`): a history transform. The host passes the
 * history it is about to show an agent; the provider returns it without out-of-character
 * player lines, written ((like this)). Its output is the next provider's input (a pipeline).
 */

const OUT_OF_CHARACTER = /^\s*\(\(.*\)\)\s*$/s;

export default function (covel) {
  covel.provideExtension("prompt.history-transform@1", "drop-ooc", {
    handler(input) {
      // "((garble))" makes the provider answer with a shape the point refuses, so the tests
      // can see the host keep the history as it was.
      if (input.messages.some((m) => /garble/.test(m.content))) return { messages: "garbled" };
      return {
        messages: input.messages.filter((m) => !(m.role === "user" && OUT_OF_CHARACTER.test(m.content))),
      };
    },
  });
}
