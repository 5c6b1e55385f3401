/**
 * The booth's seccomp filter, read instruction by instruction: a small classic-BPF interpreter runs it on every
 * system call it names, for both architectures, and its syscall numbers are compared with the kernel's headers.
 * (test/booth/escape/shell.test.ts shows the kernel loading it and refusing the calls inside the sandbox.)
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  buildSeccompFilter,
  SECCOMP_DENIED_SYSCALLS,
  SECCOMP_TABLE,
  type SeccompArch,
} from '../../src/booth/shell';

const ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7 } as const;
const ALLOW = 0x7fff0000;
const KILL_PROCESS = 0x80000000;
const ERRNO_EPERM = 0x00050001;
const ERRNO_ENOSYS = 0x00050026;

/** Runs the filter on one call: the 32-bit words of struct seccomp_data it loads, then its jumps and return. */
function run(filter: Buffer, call: { arch: number; nr: number; args?: number[] }): number {
  const word = (off: number): number => {
    if (off === 0) return call.nr >>> 0;
    if (off === 4) return call.arch >>> 0;
    const i = (off - 16) / 8;
    if (off >= 16 && Number.isInteger(i)) return (call.args?.[i] ?? 0) >>> 0;
    throw new Error(`load of offset ${off}`);
  };
  let a = 0;
  for (let pc = 0; pc < filter.length / 8; ) {
    const code = filter.readUInt16LE(pc * 8);
    const jt = filter.readUInt8(pc * 8 + 2);
    const jf = filter.readUInt8(pc * 8 + 3);
    const k = filter.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) {
      a = word(k);
      pc++;
    } else if (code === 0x15) pc += 1 + (a === k ? jt : jf);
    else if (code === 0x45) pc += 1 + ((a & k) !== 0 ? jt : jf);
    else if (code === 0x06) return k;
    else throw new Error(`unknown instruction ${code.toString(16)}`);
  }
  throw new Error('the filter ran off its end');
}

describe.each(['x86_64', 'aarch64'] as const)('the seccomp filter for %s', (arch: SeccompArch) => {
  const filter = buildSeccompFilter(arch);
  const col = arch === 'x86_64' ? 0 : 1;
  const nr = (name: string) => SECCOMP_TABLE[name]![col]!;
  const call = (name: string, args: number[] = []) => run(filter, { arch: ARCH[arch], nr: nr(name), args });

  it('refuses every denied call with EPERM', () => {
    const denied = SECCOMP_DENIED_SYSCALLS.filter((n) => SECCOMP_TABLE[n]![col] !== null);
    expect(denied.length).toBeGreaterThan(45);
    for (const name of denied) expect(call(name), name).toBe(ERRNO_EPERM);
  });

  it('allows everything else: every number up to 450 that it does not name', () => {
    const named = new Set(Object.values(SECCOMP_TABLE).map((nrs) => nrs[col]));
    for (let n = 0; n < 450; n++)
      if (!named.has(n)) expect(run(filter, { arch: ARCH[arch], nr: n })).toBe(ALLOW);
  });

  it('clone: refused with a namespace flag, allowed for fork and threads; clone3 answers ENOSYS', () => {
    const SIGCHLD = 17;
    const THREAD = 0x3d0f00; // CLONE_VM | FS | FILES | SIGHAND | THREAD | SYSVSEM | SETTLS | PARENT/CHILD_SETTID
    expect(call('clone', [SIGCHLD])).toBe(ALLOW);
    expect(call('clone', [THREAD])).toBe(ALLOW);
    for (const flag of [
      0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x80,
    ])
      expect(call('clone', [SIGCHLD | flag]), flag.toString(16)).toBe(ERRNO_EPERM);
    expect(call('clone3')).toBe(ERRNO_ENOSYS);
  });

  it('ioctl: TIOCSTI and TIOCLINUX refused, other requests allowed', () => {
    expect(call('ioctl', [0, 0x5412])).toBe(ERRNO_EPERM);
    expect(call('ioctl', [0, 0x541c])).toBe(ERRNO_EPERM);
    expect(call('ioctl', [0, 0x5401])).toBe(ALLOW); // TCGETS
  });

  it('kills a call made through another ABI', () => {
    expect(run(filter, { arch: 0x40000003, nr: 1 })).toBe(KILL_PROCESS); // i386
    const other = arch === 'x86_64' ? 'aarch64' : 'x86_64';
    expect(run(filter, { arch: ARCH[other], nr: 39 })).toBe(KILL_PROCESS);
    if (arch === 'x86_64') expect(run(filter, { arch: ARCH.x86_64, nr: 0x40000000 | 39 })).toBe(KILL_PROCESS);
  });
});

/** `#define __NR_name N` (and asm-generic's `__NR3264_name`) from a kernel header. */
function headerTable(file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of fs.readFileSync(file, 'utf8').matchAll(/^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
}

describe('syscall numbers match the kernel headers', () => {
  const headers: Record<SeccompArch, string> = {
    x86_64: '/usr/include/x86_64-linux-gnu/asm/unistd_64.h',
    // arm64 takes its numbers from the generic table.
    aarch64: '/usr/include/asm-generic/unistd.h',
  };
  const host: SeccompArch | null =
    process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? 'aarch64' : null;

  const check = (arch: SeccompArch) => {
    const file = headers[arch];
    expect(fs.existsSync(file), `${file} is missing: install linux-libc-dev`).toBe(true);
    const table = headerTable(file);
    const col = arch === 'x86_64' ? 0 : 1;
    for (const [name, nrs] of Object.entries(SECCOMP_TABLE))
      expect(nrs[col], name).toBe(table.get(name) ?? null);
  };
  // The host's own headers come with linux-libc-dev (scripts/system-deps.sh); x86_64's are absent on another host.
  it.skipIf(host !== 'x86_64' && !fs.existsSync(headers.x86_64))('x86_64', () => check('x86_64'));
  it('aarch64 (the generic table)', () => check('aarch64'));
});
