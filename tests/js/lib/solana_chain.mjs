// A Solana chain for tests: litesvm (an in-process SVM with the Token and Associated Token programs,
// signature and blockhash checks on) behind a small JSON-RPC server on loopback that speaks the
// methods the payout engine's ChainClient calls (../shared/reference/payouts.md): getLatestBlockhash,
// sendTransaction, getSignatureStatuses, getBlockHeight, getTokenAccountBalance, getBalance. A
// USDC-like mint (6 decimals) and the hot wallet's token account are set up in it. Faults on demand:
// drop the answer after doing the work, time out, or answer an error.
import { createServer } from 'node:http';
import { LiteSVM } from 'litesvm';
import { address, getAddressEncoder, getBase58Decoder, getTransactionDecoder, getBase64Encoder, lamports }
  from '@solana/kit';
import { getMintEncoder, getMintSize, getTokenEncoder, getTokenSize } from '@solana-program/token';
import { PublicKey, Keypair } from '@solana/web3.js';

export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';

export function associatedTokenAccount(wallet, mint) {
  return PublicKey.findProgramAddressSync(
    [new PublicKey(wallet).toBuffer(), new PublicKey(TOKEN_PROGRAM).toBuffer(), new PublicKey(mint).toBuffer()],
    new PublicKey(ATA_PROGRAM))[0].toBase58();
}

export class SolanaTestChain {
  // hotSeed: 32 bytes; the hot wallet gets `usdc` (base units) and 10 SOL.
  constructor({ hotSeed, usdc = 1_000_000_000n } = {}) {
    this.svm = new LiteSVM();
    this.hot = Keypair.fromSeed(hotSeed);
    this.mint = Keypair.generate().publicKey.toBase58();
    this.faults = [];  // queued: 'drop' (work done, no answer), 'timeout' (no work, no answer), 'error'
    this.methodFaults = {};  // the same, queued for one method only (sendTransaction: [...]), used first
    this.sent = [];    // signatures that reached the SVM successfully
    this.seen = new Map();  // signature -> {err, slot}
    this.calls = {};  // method -> requests received
    this.held = new Set();  // the requests a 'timeout' holds unanswered now: {method, since (performance.now())}
    this.height = 1n;
    const rent = (size) => this.svm.minimumBalanceForRentExemption(BigInt(size));
    this.svm.setAccount({
      address: address(this.mint), executable: false, lamports: lamports(rent(getMintSize())),
      programAddress: address(TOKEN_PROGRAM), space: BigInt(getMintSize()),
      data: new Uint8Array(getMintEncoder().encode({ mintAuthority: address(this.hot.publicKey.toBase58()),
        supply: usdc, decimals: 6, isInitialized: true, freezeAuthority: null })),
    });
    this.hotTokenAccount = associatedTokenAccount(this.hot.publicKey.toBase58(), this.mint);
    this.setTokenBalance(this.hotTokenAccount, this.hot.publicKey.toBase58(), usdc);
    this.svm.airdrop(address(this.hot.publicKey.toBase58()), lamports(10_000_000_000n));
  }

  setTokenBalance(account, owner, amount) {
    const rent = this.svm.minimumBalanceForRentExemption(BigInt(getTokenSize()));
    this.svm.setAccount({
      address: address(account), executable: false, lamports: lamports(rent), programAddress: address(TOKEN_PROGRAM),
      space: BigInt(getTokenSize()),
      data: new Uint8Array(getTokenEncoder().encode({ mint: address(this.mint), owner: address(owner), amount,
        delegate: null, state: 1, isNative: null, delegatedAmount: 0n, closeAuthority: null })),
    });
  }

  // The token balance of an account on the SVM (base units), 0n when it does not exist.
  tokenBalance(account) {
    const a = this.svm.getAccount(address(account));
    if (!a.exists) return 0n;
    return Buffer.from(a.data).readBigUInt64LE(64);
  }

  // A new blockhash: the ones handed out before expire (as when ~150 blocks have passed).
  expireBlockhash() {
    this.svm.expireBlockhash();
    this.height += 200n;
  }

  handle(method, params) {
    switch (method) {
      case 'getLatestBlockhash':
        return { context: { slot: Number(this.height) }, value: { blockhash: this.svm.latestBlockhash(),
          lastValidBlockHeight: Number(this.height + 150n) } };
      case 'getBlockHeight':
        return Number(this.height);
      case 'sendTransaction': {
        const bytes = Buffer.from(params[0], 'base64');
        const tx = getTransactionDecoder().decode(new Uint8Array(bytes));
        const signature = getBase58Decoder().decode(Object.values(tx.signatures)[0]);
        if (this.seen.has(signature)) return signature;  // a re-send of landed bytes: the same id
        const result = this.svm.sendTransaction(tx);
        if (typeof result.err === 'function') {
          const e = result.err();
          // A fieldless error (BlockhashNotFound = 7, AlreadyProcessed = 6, a fee or signature failure) is
          // what a node's preflight refuses: the transaction never executes and has no status. Only an
          // error while executing (an instruction's) lands, fee paid, as a failed transaction.
          if (typeof e === 'number') {
            throw Object.assign(new Error(`Transaction simulation failed: ${e === 7 ? 'Blockhash not found' : `error ${e}`}`),
              { code: -32002 });
          }
          const err = JSON.stringify(e, (k, v) => (typeof v === 'bigint' ? String(v) : v)) ?? String(e);
          this.seen.set(signature, { err, slot: Number(this.height) });
          throw Object.assign(new Error(`Transaction simulation failed: ${err}`), { code: -32002 });
        }
        this.seen.set(signature, { err: null, slot: Number(this.height) });
        this.sent.push(signature);
        this.height += 1n;
        return signature;
      }
      case 'getSignatureStatuses':
        return { context: { slot: Number(this.height) }, value: params[0].map((s) => {
          const seen = this.seen.get(s);
          if (!seen) return null;
          return { slot: seen.slot, confirmations: null, err: seen.err ? { InstructionError: seen.err } : null,
            confirmationStatus: 'finalized' };
        }) };
      case 'getTokenAccountBalance': {
        const amount = this.tokenBalance(params[0]);
        return { context: { slot: Number(this.height) }, value: { amount: String(amount), decimals: 6,
          uiAmountString: (Number(amount) / 1e6).toString() } };
      }
      case 'getBalance':
        return { context: { slot: Number(this.height) }, value: Number(this.svm.getBalance(address(params[0])) ?? 0n) };
      default:
        throw Object.assign(new Error(`Method not found: ${method}`), { code: -32601 });
    }
  }

  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        let request;
        try { request = JSON.parse(body); } catch { res.writeHead(400).end(); return; }
        this.calls[request.method] = (this.calls[request.method] || 0) + 1;
        const fault = (this.methodFaults[request.method] || []).shift() ?? this.faults.shift();
        if (fault === 'timeout') {  // never answers; the client's timeout decides
          const held = { method: request.method, since: performance.now() };
          this.held.add(held);
          res.on('close', () => this.held.delete(held));
          return;
        }
        if (fault === 'error') {
          res.writeHead(503, { 'Content-Type': 'text/plain' }).end('upstream unavailable');
          return;
        }
        let answer;
        try {
          answer = { jsonrpc: '2.0', id: request.id, result: this.handle(request.method, request.params || []) };
        } catch (e) {
          answer = { jsonrpc: '2.0', id: request.id, error: { code: e.code ?? -32000, message: e.message } };
        }
        if (fault === 'drop') { req.socket.destroy(); return; }  // the work is done; the answer is lost
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
      });
    });
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  async stop() {
    this.server.closeAllConnections?.();
    await new Promise((r) => this.server.close(r));
  }
}

export { getAddressEncoder, getBase64Encoder };
