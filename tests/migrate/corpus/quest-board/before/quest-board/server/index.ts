export default function register(covel: { registerRpc: (name: string, fn: () => unknown) => void }): void {
  covel.registerRpc("post-quest", async () => ({ ok: true }));
}
