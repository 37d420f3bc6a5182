// Starts fauxqs for the no-Docker stack: scripts/stack.sh runs it as
//   node_modules/.bin/node fauxqs.mjs
// fauxqs's own CLI (dist/cli.js) always listens on 0.0.0.0 and always logs every
// request (it passes logger: true, so FAUXQS_LOGGER is ignored). This launcher calls
// the same startFauxqs() but binds FAUXQS_BIND (default 127.0.0.1) and honours
// FAUXQS_LOGGER. fauxqs has no bind option, so the listen address is rewritten here.
// With FAUXQS_LISTEN_FD=N it serves on the listening socket its parent passed down as
// descriptor N instead of binding one (pkg/fauxqs does, so that no other process can
// take the port between its choice and fauxqs's start; see pkg/listener).
// Other settings are fauxqs's own env: FAUXQS_PORT, FAUXQS_INIT, FAUXQS_HOST, ...
import net from "node:net";
import { startFauxqs } from "fauxqs";

const bind = process.env.FAUXQS_BIND || "127.0.0.1";
const fd = process.env.FAUXQS_LISTEN_FD ? Number(process.env.FAUXQS_LISTEN_FD) : undefined;
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (opts, ...rest) {
  if (opts && typeof opts === "object" && fd !== undefined) {
    opts = { fd };
  } else if (opts && typeof opts === "object" && opts.host === "0.0.0.0") {
    opts = { ...opts, host: bind };
  }
  return listen.call(this, opts, ...rest);
};

const logger = (process.env.FAUXQS_LOGGER ?? "false") !== "false";
const server = await startFauxqs({ logger });
console.log(`fauxqs listening on ${server.address}`);

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => server.stop().finally(() => process.exit(0)));
}
