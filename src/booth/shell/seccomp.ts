/**
 * The seccomp filter shell commands run under (bubblewrap `--seccomp FD`): a classic BPF program, built here with
 * no native dependency, that refuses with EPERM the system calls an agent's command never needs and that are the
 * kernel's usual way out of a sandbox or into its attack surface: mounting and the new mount API, namespaces
 * (`unshare`, `setns`, `clone` with a namespace flag; `clone3`, whose flags the filter cannot read, answers ENOSYS
 * so the C library falls back to `clone`), kernel modules, kexec, reboot, swap, tracing other processes
 * (`ptrace`, `process_vm_*`, `pidfd_getfd`, `kcmp`), `perf_event_open`, `bpf`, `userfaultfd`, `io_uring`, the
 * kernel keyring, file handles (`open_by_handle_at`), clock setting, accounting, quotas, the kernel log, `vhangup`,
 * x86 port I/O, and the terminal-injection ioctls (`TIOCSTI`, `TIOCLINUX`). Everything else is allowed.
 *
 * The program checks the architecture first: a call made through another ABI (32-bit `int 0x80` on x86_64, x32)
 * would bypass the numbers below, so it kills the process. Syscall numbers come from the kernel's tables
 * (`asm/unistd_64.h` for x86_64, `asm-generic/unistd.h` for aarch64); a test compares them with the headers.
 */

/** Syscall numbers per architecture; `null` where the architecture has no such call. */
const DENIED: Record<string, [x86_64: number | null, aarch64: number | null]> = {
  mount: [165, 40],
  umount2: [166, 39],
  pivot_root: [155, 41],
  chroot: [161, 51],
  open_tree: [428, 428],
  move_mount: [429, 429],
  fsopen: [430, 430],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fspick: [433, 433],
  mount_setattr: [442, 442],
  unshare: [272, 97],
  setns: [308, 268],
  init_module: [175, 105],
  finit_module: [313, 273],
  delete_module: [176, 106],
  kexec_load: [246, 104],
  kexec_file_load: [320, 294],
  reboot: [169, 142],
  swapon: [167, 224],
  swapoff: [168, 225],
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  pidfd_getfd: [438, 438],
  kcmp: [312, 272],
  perf_event_open: [298, 241],
  bpf: [321, 280],
  userfaultfd: [323, 282],
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  add_key: [248, 217],
  request_key: [249, 218],
  keyctl: [250, 219],
  open_by_handle_at: [304, 265],
  name_to_handle_at: [303, 264],
  settimeofday: [164, 170],
  clock_settime: [227, 112],
  clock_adjtime: [305, 266],
  adjtimex: [159, 171],
  acct: [163, 89],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  syslog: [103, 116],
  vhangup: [153, 58],
  lookup_dcookie: [212, 18],
  fanotify_init: [300, 262],
  nfsservctl: [180, 42],
  iopl: [172, null],
  ioperm: [173, null],
  modify_ldt: [154, null],
  uselib: [134, null],
};

/** Checked by argument rather than refused outright. */
const CLONE: [number, number] = [56, 220];
const CLONE3: [number, number] = [435, 435];
const IOCTL: [number, number] = [16, 29];

export const SECCOMP_DENIED_SYSCALLS: readonly string[] = Object.keys(DENIED);
export const SECCOMP_TABLE: Readonly<Record<string, readonly [number | null, number | null]>> = {
  ...DENIED,
  clone: CLONE,
  clone3: CLONE3,
  ioctl: IOCTL,
};

const AUDIT_ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7 } as const;
export type SeccompArch = keyof typeof AUDIT_ARCH;

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME. */
const CLONE_NEW_NAMESPACES =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
const X32_SYSCALL_BIT = 0x40000000;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;

/** struct seccomp_data: nr at 0, arch at 4, ip at 8, args[i] at 16 + 8i (low 32 bits first: little endian). */
const OFF_NR = 0;
const OFF_ARCH = 4;
const OFF_ARG0 = 16;
const OFF_ARG1 = 24;

type Insn = { code: number; jt: number; jf: number; k: number };

/** The architecture this process runs on, as the filter names it, or null where there is no table for it. */
export function seccompArch(arch: string = process.arch): SeccompArch | null {
  if (arch === 'x64') return 'x86_64';
  if (arch === 'arm64') return 'aarch64';
  return null;
}

/**
 * The filter for `arch` as bubblewrap reads it from `--seccomp FD`: `struct sock_filter` records (u16 code,
 * u8 jt, u8 jf, u32 k, little endian), 8 bytes each.
 */
export function buildSeccompFilter(arch: SeccompArch): Buffer {
  const col = arch === 'x86_64' ? 0 : 1;
  const denied = [
    ...new Set(Object.values(DENIED).flatMap((nrs) => (nrs[col] === null ? [] : [nrs[col]!]))),
  ].sort((a, b) => a - b);
  // Built back to front, so every jump is a known distance forward to one of the shared return instructions.
  const prog: Insn[] = [];
  const emit = (i: Insn) => prog.unshift(i);
  const distance = (target: number) => prog.length - target;
  // Return instructions, addressed by their position counted from the end.
  emit({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_ERRNO | EPERM });
  const deny = prog.length;
  emit({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_ALLOW });
  const allow = prog.length;
  emit({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_ERRNO | ENOSYS });
  const nosys = prog.length;
  // ioctl: refuse the two terminal-injection requests.
  emit({ code: BPF_JEQ_K, jt: distance(deny), jf: distance(allow), k: TIOCLINUX });
  emit({ code: BPF_JEQ_K, jt: distance(deny), jf: 0, k: TIOCSTI });
  emit({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: OFF_ARG1 });
  const ioctlArgs = prog.length;
  // clone: refuse any namespace flag.
  emit({ code: BPF_JSET_K, jt: distance(deny), jf: distance(allow), k: CLONE_NEW_NAMESPACES });
  emit({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: OFF_ARG0 });
  const cloneArgs = prog.length;
  // The syscall number: the argument checks, then the plain refusals, then allow.
  emit({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_ALLOW });
  for (const nr of denied.reverse()) emit({ code: BPF_JEQ_K, jt: distance(deny), jf: 0, k: nr });
  emit({ code: BPF_JEQ_K, jt: distance(nosys), jf: 0, k: CLONE3[col] });
  emit({ code: BPF_JEQ_K, jt: distance(ioctlArgs), jf: 0, k: IOCTL[col] });
  emit({ code: BPF_JEQ_K, jt: distance(cloneArgs), jf: 0, k: CLONE[col] });
  // x32 calls carry bit 30 in the number: another ABI, refused like a foreign architecture.
  if (arch === 'x86_64') {
    emit({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_KILL_PROCESS });
    emit({ code: BPF_JSET_K, jt: 0, jf: 1, k: X32_SYSCALL_BIT });
  }
  emit({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: OFF_NR });
  emit({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_KILL_PROCESS });
  emit({ code: BPF_JEQ_K, jt: 1, jf: 0, k: AUDIT_ARCH[arch] });
  emit({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: OFF_ARCH });
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach((insn, i) => {
    if (insn.jt > 255 || insn.jf > 255) throw new Error('seccomp filter jump out of range');
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(insn.jt, i * 8 + 2);
    out.writeUInt8(insn.jf, i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}
