// The payout transaction the C++ builder signs (core/solana, through tests/tools/solana_payout_tx),
// decoded by @solana/web3.js 1.x, an independent implementation: the signature verifies, the fee
// payer is the hot wallet, and the instructions are compute budget, CreateIdempotent for the
// provider's associated token account, TransferChecked of the exact amount, and the payout's memo,
// with the accounts web3.js and spl-token's derivation expect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Transaction, PublicKey, ComputeBudgetProgram } from '@solana/web3.js';

const TOOL = process.env.GPUNEX_SOLANA_TX_TOOL;
const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const ATA = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
const MEMO = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';

function build(args) {
  return JSON.parse(execFileSync(TOOL, args, { encoding: 'utf8' }));
}

const ata = (wallet) => PublicKey.findProgramAddressSync(
  [new PublicKey(wallet).toBuffer(), new PublicKey(TOKEN).toBuffer(), new PublicKey(USDC).toBuffer()],
  new PublicKey(ATA))[0].toBase58();

test('the C++ payout transaction decodes with @solana/web3.js to the expected instructions, and its signature verifies', () => {
  assert.ok(TOOL, 'GPUNEX_SOLANA_TX_TOOL names the built tool (ctest sets it)');
  const to = 'GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE';
  const blockhash = 'EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N';
  const cases = [[4_800_000, 6, 0], [123_456_789, 6, 5000], [1, 9, 0]];
  for (const [amount, decimals, cuPrice] of cases) {
    const memo = `pay_${amount}_${decimals}`;
    const out = build(['0101010101010101010101010101010101010101010101010101010101010101', USDC, to,
      String(amount), String(decimals), memo, blockhash, String(cuPrice)]);
    const tx = Transaction.from(Buffer.from(out.transaction_base64, 'base64'));
    assert.equal(tx.verifySignatures(), true, 'the signature verifies over the message');
    assert.equal(tx.feePayer.toBase58(), out.hot_wallet);
    assert.equal(tx.recentBlockhash, blockhash);
    assert.equal(tx.signatures.length, 1);
    const programs = tx.instructions.map((i) => i.programId.toBase58());
    const expected = [ComputeBudgetProgram.programId.toBase58()];
    if (cuPrice > 0) expected.push(ComputeBudgetProgram.programId.toBase58());
    assert.deepEqual(programs, [...expected, ATA, TOKEN, MEMO]);
    const [create, transfer, memoIx] = tx.instructions.slice(-3);

    // Compute budget: SetComputeUnitLimit (2, u32) and, with a priority fee, SetComputeUnitPrice (3, u64).
    assert.equal(tx.instructions[0].data[0], 2);
    if (cuPrice > 0) assert.equal(tx.instructions[1].data.readBigUInt64LE(1), BigInt(cuPrice));

    // CreateIdempotent: payer, the provider's associated account (as web3.js derives it), wallet, mint, System, Token.
    assert.deepEqual([...create.data], [1]);
    assert.deepEqual(create.keys.map((k) => [k.pubkey.toBase58(), k.isSigner, k.isWritable]), [
      [out.hot_wallet, true, true], [ata(to), false, true], [to, false, false], [USDC, false, false],
      ['11111111111111111111111111111111', false, false], [TOKEN, false, false]]);
    assert.equal(out.destination_token_account, ata(to));

    // TransferChecked: 12, amount (u64 LE, in the mint's units), decimals; from the hot wallet's account,
    // signed by the hot wallet (writable in the decoded message: it is also the fee payer).
    assert.equal(transfer.data[0], 12);
    assert.equal(transfer.data.readBigUInt64LE(1), BigInt(amount) * 10n ** BigInt(decimals - 6));
    assert.equal(transfer.data[9], decimals);
    assert.deepEqual(transfer.keys.map((k) => [k.pubkey.toBase58(), k.isSigner, k.isWritable]), [
      [ata(out.hot_wallet), false, true], [USDC, false, false], [ata(to), false, true], [out.hot_wallet, true, true]]);
    assert.equal(out.source_token_account, ata(out.hot_wallet));

    // The memo is the payout id.
    assert.equal(memoIx.data.toString('utf8'), memo);
    assert.deepEqual(memoIx.keys, []);
  }
});
