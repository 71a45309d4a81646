// The containment state of this host, kept in one place and reported to the supervisor in the
// ready frame (pluginhost/host.py checks it before the host gets any call):
//
// - permission: Node's permission model (a community host: on, reading only the host and its
//   package, writing nowhere, no child processes, workers, addons, WASI or inspector);
// - sockets: whether the OS lets this process open a socket at all ("refused" under the seccomp
//   filter of sockwall.py, which a community host must have);
// - interfaces: the network interfaces (none in an empty network namespace; null where the socket
//   filter refuses even the lookup);
// - networkGlobals: fetch and friends still defined (contain.mjs removes them);
// - frozen: how many shared objects the realm wall froze (freeze.mjs), 0 when it is off.
import net from "node:net";
import os from "node:os";
import path from "node:path";
import * as sdk from "./sdk.mjs";
import { NETWORK_GLOBALS } from "./contain.mjs";
import { freezeRealm } from "./freeze.mjs";
import { ALLOWED_BUILTINS } from "./resolver.mjs";
import { SETTINGS, TRUST } from "./settings.mjs";

// A connection to a path that does not exist fails with ENOENT where sockets are allowed, and
// with EPERM where the OS refuses socket() itself.
function probeSockets() {
  return new Promise((resolve) => {
    let probe;
    try {
      probe = net.connect({ path: path.join(os.tmpdir(), `covel-socket-probe-${process.pid}`) });
    } catch (error) {
      resolve(`refused: ${error.code ?? error.message}`);
      return;
    }
    probe.on("connect", () => {
      probe.destroy();
      resolve("allowed");
    });
    probe.on("error", (error) => resolve(error.code === "EPERM" || error.code === "EACCES" ? "refused" : "allowed"));
  });
}

function interfaces() {
  try {
    return Object.keys(os.networkInterfaces());
  } catch {
    return null; // refused by the socket wall
  }
}

/**
 * Survey the walls, then raise the realm wall: from here on no shared prototype or global can be
 * patched. `instances` are the host's own live objects (its channel socket, its
 * AsyncLocalStorage) whose prototypes must be frozen too. Returns the ready frame's fields.
 */
export async function raiseWalls({ instances }) {
  const sockets = await probeSockets();
  const seen = interfaces();
  const realm = SETTINGS.COVEL_HOST_FREEZE === "0" ? { frozen: 0 } : freezeRealm({
    modules: [sdk, ...(await Promise.all([...ALLOWED_BUILTINS, "net", "stream", "async_hooks", "timers"].map((name) => import(`node:${name}`))))],
    instances: [...instances, process.stdout, process.stderr, process.stdin, new AbortController(), setTimeout(() => {}, 0), setImmediate(() => {})],
  });
  const can = (scope) => (process.permission ? process.permission.has(scope) : true);
  return {
    trust: TRUST,
    permission: {
      enabled: Boolean(process.permission),
      fsWrite: can("fs.write"),
      childProcess: can("child"),
      worker: can("worker"),
      addons: can("addon"),
      wasi: can("wasi"),
      inspector: can("inspector"),
    },
    interfaces: seen,
    sockets,
    networkGlobals: NETWORK_GLOBALS.filter((name) => name in globalThis),
    frozen: realm.frozen,
  };
}
