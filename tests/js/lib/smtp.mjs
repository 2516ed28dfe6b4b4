// A real SMTP server for tests: Debian's python3-aiosmtpd (lib/smtp_sink.py) on a
// loopback port, writing each message it receives as an .eml file.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from './server.mjs';

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// Debian's interpreter, where python3-aiosmtpd lives (a python3 first on PATH may be another one).
const PYTHON = process.env.GPUNEX_PYTHON || (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

export class SmtpSink {
  // refuseEach: answer "451 try again later" to each message (by Message-ID) this many times first.
  constructor(port, dir, { refuseEach = 0 } = {}) {
    this.port = port;
    this.dir = dir;
    this.refuseEach = refuseEach;
  }

  async start() {
    this.proc = spawn(PYTHON, [path.join(ROOT, 'tests/js/lib/smtp_sink.py'), String(this.port), this.dir,
      String(this.refuseEach)], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.proc.on('exit', resolve));
    await new Promise((resolve, reject) => {
      let err = '';
      this.proc.stderr.on('data', (d) => { err += d; });
      this.proc.stdout.on('data', (d) => { if (String(d).includes('ready')) resolve(); });
      this.proc.on('exit', (code) => reject(new Error(`smtp sink exited ${code}: ${err}`)));
    });
    return this;
  }

  async stop() {
    if (this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    await this.exited;
  }

  messages() {
    return readdirSync(this.dir).filter((f) => f.endsWith('.eml') && !f.startsWith('.')).sort()
      .map((f) => readFileSync(path.join(this.dir, f), 'utf8'));
  }

  // Every attempt to send, oldest first: {atMs, accepted, messageId, text}.
  attempts() {
    return readdirSync(this.dir).filter((f) => /^\d+-\d+\.(eml|refused)$/.test(f))
      .sort((a, b) => (BigInt(a.split('-')[0]) < BigInt(b.split('-')[0]) ? -1 : 1))
      .map((f) => {
        const text = readFileSync(path.join(this.dir, f), 'utf8');
        return { atMs: Number(BigInt(f.split('-')[0]) / 1000000n), accepted: f.endsWith('.eml'),
          messageId: (text.match(/^Message-ID: (\S+)/m) || [])[1], text };
      });
  }

  async waitFor(pred, what, ms = 15000) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const m = this.messages().find(pred);
      if (m) return m;
      await sleep(100);
    }
    throw new Error(`no mail ${what} within ${ms} ms; got:\n${this.messages().join('\n----\n')}`);
  }
}
