// Runs a command on a pseudo-terminal (util-linux `script`), for tests of what a person at a
// terminal sees: prompts, what is echoed and what is not, output meant for a terminal only.
import { spawn } from 'node:child_process';
import { until } from './server.mjs';

const quote = (s) => `'${String(s).replaceAll("'", "'\\''")}'`;

export class Pty {
  // argv[0] is the program; it runs with the terminal as its standard input, output and error.
  constructor(argv, { env = process.env, cwd } = {}) {
    this.raw = '';
    // -q: no start and end lines, -e: script exits with the command's status, -f: flush at once.
    // exec: the command itself leads the terminal's session and gets its Ctrl-C, as in a shell.
    this.proc = spawn('script', ['-qefc', `exec ${argv.map(quote).join(' ')}`, '/dev/null'],
      { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc.stdout.on('data', (d) => { this.raw += d; });
    this.proc.stderr.on('data', (d) => { this.raw += d; });
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
  }

  // What the terminal showed so far, with the terminal's \r\n line ends as \n.
  get text() { return this.raw.replaceAll('\r\n', '\n'); }

  // Waits until the terminal shows `what` (a string or a RegExp).
  async expect(what, timeoutMs = 30000) {
    const seen = () => (typeof what === 'string' ? this.text.includes(what) : what.test(this.text));
    await until(`the terminal to show ${what}`, () => seen() || this.proc.exitCode !== null, timeoutMs, 50);
    if (!seen()) throw new Error(`the terminal never showed ${what}; it showed:\n${this.text}`);
  }

  // Keys typed at the terminal.
  type(keys) { this.proc.stdin.write(keys); }

  // The command's exit status (script -e passes it on), or an error after timeoutMs.
  async wait(timeoutMs = 30000) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms:\n${this.text}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
