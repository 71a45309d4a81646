export function hint(locale) {
  return locale === "zh" ? "保持句子简短。" : "Keep the sentences short.";
}
