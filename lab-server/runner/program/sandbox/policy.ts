/**
 * Whether learner programs run sandboxed in this process: yes when bubblewrap works here. Without
 * it (or with KAFKAIQ_SANDBOX=off, meant for a learner's own machine) programs run with Node's
 * permission model only, which does not stop hostile code: allowed only for a server on loopback,
 * and said on start and in the workbench.
 */
import { KafkaIqError } from '../../../../src/shared/errors.ts';
import { probeSandbox, type SandboxRuntime } from './bubblewrap.ts';

export type SandboxPolicy = { sandboxed: true; runtime: SandboxRuntime } | { sandboxed: false; reason: string; requestedOff: boolean };

let policy: SandboxPolicy | null = null;

/** The policy of this process (decided once, on first use). */
export function sandboxPolicy(): SandboxPolicy {
  if (policy) return policy;
  const setting = (process.env.KAFKAIQ_SANDBOX ?? 'auto').trim().toLowerCase();
  if (!['auto', 'on', 'off'].includes(setting)) {
    throw new KafkaIqError('INVALID_INPUT', `KAFKAIQ_SANDBOX=${setting} is not a setting: use on, off or leave it unset.`);
  }
  if (setting === 'off') {
    policy = { sandboxed: false, reason: 'KAFKAIQ_SANDBOX=off', requestedOff: true };
    return policy;
  }
  const probe = probeSandbox();
  if (probe.ok) policy = { sandboxed: true, runtime: probe.runtime };
  else if (setting === 'on') throw new KafkaIqError('INVALID_INPUT', `KAFKAIQ_SANDBOX=on but ${probe.reason}.`);
  else policy = { sandboxed: false, reason: probe.reason, requestedOff: false };
  return policy;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|\[::1\])$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host.trim());
}

/**
 * The server's check at start: a warning line when programs run unsandboxed (null when they are
 * sandboxed), or an error when it would serve unsandboxed programs beyond this machine.
 */
export function sandboxStartCheck(host: string): { warning: string | null; summary: string } {
  const p = sandboxPolicy();
  if (p.sandboxed) {
    const { runtime } = p;
    return {
      warning: null,
      summary: `Sandbox: bubblewrap, uid ${runtime.hostUid}${runtime.cgroups ? `, cgroup ${runtime.cgroups} limits` : ', no cgroups (not root): memory is the V8 heap limit only'}, network through the grader's relay only`,
    };
  }
  if (!isLoopbackHost(host)) {
    throw new KafkaIqError(
      'INVALID_INPUT',
      `Refusing to serve on HOST=${host} without a sandbox (${p.reason}): install bubblewrap ('sudo apt-get install -y bubblewrap') or serve on 127.0.0.1 for yourself only.`,
    );
  }
  const warning = `Programs run UNSANDBOXED (${p.reason}): fine for you alone on this machine, never for a class.`;
  return { warning, summary: warning };
}
