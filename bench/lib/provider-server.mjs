// Starts gpunex-server on a fresh SQLite store with an approved provider, writes
// "URL KEY" to the file named by argv[2], and runs until SIGTERM. For benchmark
// scripts that need a provider's API key (bench/network-vs-iperf3.sh).
import { writeFileSync } from 'node:fs';
import { TestServer } from '../../tests/js/lib/server.mjs';
import { approvedProvider } from '../../tests/js/lib/provider.mjs';

const out = process.argv[2];
const server = await new TestServer(['--access-log', 'false']).start();
const { key } = await approvedProvider(server, 'bench-provider@example.com');
writeFileSync(out, `${server.url} ${key}\n`);
const stop = async () => { await server.stop(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setInterval(() => {}, 1 << 30);
