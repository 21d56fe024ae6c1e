// Attack: fill the lab API's memory. Every request is a new payment with a new idempotency key
// and a large body, as fast as the connection pool allows, until the API says no; then it keeps
// trying, to show the refusal holds.
export {};
const url = process.env.API_URL!;
const pad = 'x'.repeat(Number(process.env.FLOOD_PAD ?? 2000));
let n = 0;
let applied = 0;
let refused = 0;
let first429: { status: number; retryAfter: string | null; body: unknown } | null = null;
const one = async () => {
  const i = n++;
  const res = await fetch(`${url}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `flood-${process.pid}-${i}-${pad.slice(0, 200)}` },
    body: JSON.stringify({ paymentId: `p-${process.pid}-${i}`, amountCents: 1, currency: 'EUR' }),
  });
  const text = await res.text();
  if (res.status === 201) applied++;
  else if (res.status === 429) {
    refused++;
    first429 ??= { status: res.status, retryAfter: res.headers.get('retry-after'), body: JSON.parse(text) };
  } else throw new Error(`unexpected ${res.status}: ${text.slice(0, 200)}`);
};
const until = Number(process.env.FLOOD_AFTER_REFUSED ?? 2000);
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (refused < until) await one();
  }),
);
console.log('RESULT ' + JSON.stringify({ allowed: refused === 0, applied, refused, first429 }));
