// The real gpunex-agent on simulated GPUs, reporting to a TestServer every second, for the
// browser tests that need a machine with telemetry and benchmark results.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, stopAtEnd } from './server.mjs';

// The environment for a test's agent: the container engine make test started (GPUNEX_TEST_DOCKER_HOST)
// as its DOCKER_HOST, so that its machine can run rentals and is offered (an agent with no engine
// says so, and the server offers none of its GPUs); a --docker-host flag still overrides it.
export function agentEnv(extra = {}) {
  const engine = process.env.GPUNEX_TEST_DOCKER_HOST;
  return { ...process.env, ...(engine ? { DOCKER_HOST: engine } : {}), ...extra };
}

// `simulate` is a SPEC as --simulate takes it ('L40S:2'), or a list of GPU entries
// ([{ model: 'L40S', count: 1, perf_factor: 0.7 }]) written as a machine description file.
// `args` are more agent flags (e.g. smaller storage and network benchmarks).
// stop() ends the agent with SIGTERM (or the signal given) and answers its exit code. `dir` reuses
// an earlier agent's data folder (a restart: same machine, same spool); the answer's `dir` names it.
export function startAgent(serverUrl, key, { simulate = 'L40S:1', args = [], dir = null } = {}) {
  dir = dir || mkdtempSync(path.join(tmpdir(), 'gpunex-agent-'));
  let spec = simulate;
  if (Array.isArray(simulate)) {
    spec = path.join(dir, 'machine.toml');
    writeFileSync(spec, simulate.map((g) => `[[gpu]]\n${Object.entries(g)
      .map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join('\n')}\n`).join('\n'));
  }
  // The key as the installer hands it over: a 0600 file, never the command line or the environment.
  const keyFile = path.join(dir, 'agent.key');
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  const logs = [];
  const proc = spawn(path.join(BIN, 'gpunex-agent'), ['run', '--server', serverUrl, '--data-dir', dir,
    '--api-key-file', keyFile, '--heartbeat-interval', '1', '--simulate', spec, ...args],
  { env: agentEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  stopAtEnd(proc, 'gpunex-agent');
  proc.stdout.on('data', (d) => logs.push(d.toString()));
  proc.stderr.on('data', (d) => logs.push(d.toString()));
  const exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  return {
    logs,
    dir,
    stop(signal = 'SIGTERM') { if (proc.exitCode === null) proc.kill(signal); return exited; },
  };
}
