// Attack: restart the broker (every grade on it would break) through the broker control endpoint:
// read its port and token from control.json, then POST /restart; failing that, POST without a token
// to every port the file may name.
import fs from 'node:fs';
const CONTROL_FILE = '__CONTROL_FILE__';
const PORT = Number('__CONTROL_PORT__');
async function attempt(): Promise<string[]> {
  const refusals: string[] = [];
  try {
    const info = JSON.parse(fs.readFileSync(CONTROL_FILE, 'utf8'));
    const res = await fetch(`http://127.0.0.1:${info.port}/restart`, { method: 'POST', headers: { authorization: `Bearer ${info.token}` } });
    if (res.ok) throw new Error('restart accepted with the stolen token');
  } catch (err: any) {
    if (/accepted/.test(err.message)) throw err;
    refusals.push(`read: ${err.code ?? err.message}`);
  }
  let res: Response;
  try {
    res = await fetch(`http://127.0.0.1:${PORT}/restart`, { method: 'POST' });
  } catch (err: any) {
    // Not even a connection (the sandbox's network reaches only the lab's endpoints): refused as well.
    refusals.push(`post: unreachable (${err.cause?.code ?? err.message})`);
    return refusals;
  }
  if (res.ok) throw new Error('restart accepted without a token');
  refusals.push(`post: HTTP ${res.status}`);
  return refusals;
}
try {
  const refusals = await attempt();
  console.log('RESULT ' + JSON.stringify({ allowed: false, refusal: refusals.join('; ') }));
} catch (err) {
  console.log('RESULT ' + JSON.stringify({ allowed: true, refusal: String(err) }));
}
await new Promise(() => {});
