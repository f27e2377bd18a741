// Preloaded into Artillery by bench/flows.sh (NODE_OPTIONS=--require).
// Artillery posts a usage event to an outside analytics service at the
// end of every run, even with ARTILLERY_DISABLE_TELEMETRY set (that
// variable only trims what the event carries), and waits for it to be
// retried before it exits. The benchmark sends nothing off the machine
// (it also runs in a network namespace of its own), so the client is
// replaced with one that does nothing.
const Module = require('module');
const load = Module._load;
class QuietClient {
  capture() {}
  async shutdownAsync() {}
  async shutdown() {}
}
Module._load = function (request, parent, isMain) {
  if (request === 'posthog-node') return { PostHog: QuietClient };
  return load.call(this, request, parent, isMain);
};
