// Measures the client against a running gateway: describe_skill calls one
// at a time (latency) and with 32 in flight on one connection (throughput).
//
//   node bench.js [PORT] [ROUNDS]     (default 7400 and 3)
import { connect } from './src/index.js';

const port = Number(process.argv[2] ?? 7400);
const rounds = Number(process.argv[3] ?? 3);
const client = await connect({ port });
const call = () => client.describeSkill({ name: 'skills.protocol.guide' });

/** @param {number} n @param {number} width calls in flight */
async function timed(n, width) {
  const t0 = process.hrtime.bigint();
  let started = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (started++ < n) await call();
  }));
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

await timed(2000, 32); // warm-up
for (let r = 1; r <= rounds; r++) {
  const seq = await timed(2000, 1);
  const par = await timed(20000, 32);
  console.log(`round ${r}: 1 in flight ${(2000 / seq).toFixed(0)} calls/s (${(seq / 2000 * 1e6).toFixed(0)} µs each); ` +
    `32 in flight ${(20000 / par).toFixed(0)} calls/s`);
}
await client.close();
