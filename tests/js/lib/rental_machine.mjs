// postedMachine: a listed, priced machine with no real agent or container engine (lib/rentals.mjs
// has listedMachine, the real agent on simulated GPUs): the test posts the agent's own
// messages with the provider's API key (register, a passing benchmark run of the run the server
// requested at registration, heartbeats every second)
// as tests/scenarios/market_offers_model_filter.scn does, and drives rentals through their states
// with the agent's rental messages (src/protocol/rentals.hpp): the poll for the machine's rentals,
// and rental events sequenced with the heartbeats.
import { Client } from './server.mjs';
import { requestedRunId } from './provider.mjs';

const PROTOCOL_VERSION = 1;

// Each posted machine's message sequence, by machine id, for AgentVoice (lib/rentals.mjs), which speaks
// for the same agent.
export const machineSequences = new Map();

// One sequence per machine, shared by heartbeats and rental events, sent one at a time, as the agent
// sends from its spool: the server takes a message only when its seq is above the last it took, so none
// may overtake another. `send(n)` posts the message with seq n; the seq is taken when it is queued (`at`
// sends an explicit one, such as a replay's).
export function messageSequence() {
  const sequence = {
    n: 0,
    chain: Promise.resolve(),
    send(post, at = ++sequence.n) {
      const sent = sequence.chain.then(() => post(at));
      sequence.chain = sent.catch(() => {});
      return sent;
    },
  };
  return sequence;
}

// L40S figures at the catalog's expectations (as the scenario above posts them): the GPU is listed.
function l40sResults() {
  return [
    { key: 'compute.fp16_tensor', status: 'ok', median: 289.64, samples: [289.64] },
    { key: 'compute.fp32', status: 'ok', median: 82.44, samples: [82.44] },
    { key: 'memory.copy', status: 'ok', median: 760.32, samples: [760.32] },
  ];
}

// `provider` is approvedProvider()'s answer ({ client, key }); its application must declare at least
// `gpus` L40S. Answers { machineId, uuids, rentals(), event(), stop() }; call stop() when done.
export async function postedMachine(server, provider, { gpus = 1, price = '0.50', name = 'rig' } = {}) {
  const agent = new Client(server.url);
  agent.token = provider.key;
  const must = async (what, r, status = 200) => {
    const res = await r;
    if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.body}`);
    return res.json;
  };
  const uuids = [...Array(gpus).keys()].map((i) => `GPU-${name}-l40s-${i}`);
  const reg = await must('register', agent.request('POST', '/v1/agent/register', { body: {
    protocol_version: PROTOCOL_VERSION, agent_version: '0.1.0', machine_fingerprint: `fingerprint-${name}-${process.pid}`,
    simulated: true,
    host: { hostname: name, cpu_model: 'EPYC', cpu_cores: 32, ram_mib: 262144, disk_free_mib: 900000,
      os: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0' },
    gpus: uuids.map((uuid, index) => ({ index, uuid, name: 'NVIDIA L40S', model: 'L40S', memory_mib: 46068,
      driver_version: '550.54.15', cuda_version: '12.4', pci_bus_id: `00000000:${(0x17 + index).toString(16)}:00.0` })),
  } }));
  const machineId = reg.machine_id;
  await must('benchmarks', agent.request('POST', '/v1/agent/benchmarks', { body: {
    protocol: PROTOCOL_VERSION, machine_id: machineId, run_id: await requestedRunId(agent, machineId),
    simulated: true, started_at_ms: 1000, finished_at_ms: 2000,
    gpus: uuids.map((uuid, index) => ({ index, uuid, name: 'NVIDIA L40S', ecc_uncorrected: 0, results: l40sResults(), telemetry: [] })),
    machine: [],
  } }));
  const sequence = messageSequence();
  machineSequences.set(machineId, sequence);
  const heartbeat = () => sequence.send((n) => agent.request('POST', '/v1/agent/heartbeat', { body: {
    protocol_version: PROTOCOL_VERSION, machine_id: machineId, seq: n, sent_at: new Date().toISOString(),
    telemetry: [], jobs: [],
  } }));
  await must('heartbeat', heartbeat());
  const timer = setInterval(() => { heartbeat().catch(() => {}); }, 1000);
  await must('price', provider.client.request('PUT', '/v1/provider/prices/L40S', { body: { usdc_per_gpu_hour: price } }));

  return {
    machineId,
    uuids,
    // The machine's rentals as its agent sees them (GET /v1/agent/rentals, no wait).
    async rentals() {
      return must('agent rentals', agent.request('GET',
        `/v1/agent/rentals?machine_id=${encodeURIComponent(machineId)}&known=&wait_s=0`));
    },
    // Posts one rental event as the agent does: type starting, running, ended or logs; `extra`
    // adds ports, logs, reason, exit_code, oom.
    async event(rentalId, type, extra = {}) {
      return must(`rental event ${type}`, sequence.send((n) => agent.request('POST', '/v1/agent/rental-events', { body: {
        protocol_version: PROTOCOL_VERSION, machine_id: machineId, seq: n,
        events: [{ rental_id: rentalId, type, at: new Date().toISOString(), ...extra }],
      } })));
    },
    // Ends the heartbeats (the machine goes offline after the server's missed-heartbeat limit).
    async stop() { clearInterval(timer); await sequence.chain; },
    // One heartbeat, as the agent sends them (after stop(): the agent heard from again).
    async beat() { return must('heartbeat', heartbeat()); },
  };
}
