/*
 * vb-minikernel: virtbench's unikernel-style hello world for VMMs.
 *
 * Command line (from the PVH start_info): vb.mode=hello|sleep|beat (default hello),
 * vb.name=NAME (echoed, so a console log names its instance).
 *   hello  prints "VB-HELLO NAME" on COM1 and powers the VM off
 *   sleep  prints "VB-READY NAME" on COM1 and halts forever (an idle instance)
 *   beat   prints "VB-READY NAME", then "VB-BEAT NAME TOKEN SEQ" about every 2 ms:
 *          TOKEN is the TSC at boot (16 hex digits), SEQ counts from 1. It has no
 *          timer interrupt, so it spins on the TSC between beats (its vCPU stays busy);
 *          the TSC's rate is CPUID leaf 0x16's base MHz, else taken as 2 GHz.
 * vb.dirty=MIB (beat): before ready, write MIB MiB of RAM from DIRTY_BASE with a
 *          xorshift stream (bytes that do not compress: what a snapshot must save); a
 *          range the memory map has no RAM for, or past the 1 GiB mapped, prints
 *          "vb-minikernel: dirty: no room" and halts without ready.
 * The first line, "vb-minikernel: MODE", is the first serial output of a boot.
 *
 * Power-off tries each VMM's way in turn; on the others the write goes nowhere:
 *   QEMU             isa-debug-exit at 0xf4 (exit status 1 for a write of 0)
 *   Cloud Hypervisor its ACPI shutdown device at 0x600, S5 | SLP_EN
 *   QEMU q35         ICH9 PM1a control at 0x604, SLP_EN (S5)
 *   Firecracker      i8042 reset (0xfe to 0x64), on which it exits
 * No FPU or SSE instruction is ever executed (built with -mgeneral-regs-only).
 */

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct hvm_start_info {
	u32 magic; /* 0x336ec578 */
	u32 version;
	u32 flags;
	u32 nr_modules;
	u64 modlist_paddr;
	u64 cmdline_paddr;
	u64 rsdp_paddr;
	u64 memmap_paddr;
	u32 memmap_entries;
	u32 reserved;
};

struct hvm_memmap_entry {
	u64 addr;
	u64 size;
	u32 type; /* 1: RAM */
	u32 reserved;
};

#define START_MAGIC 0x336ec578u
#define DIRTY_BASE (16ull << 20) /* above the kernel, its stack and the page tables */
#define MAPPED (1ull << 30)
#define COM1 0x3f8

void kmain(const struct hvm_start_info *si);

static inline void outb(u16 port, u8 v) { __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port)); }
static inline void outw(u16 port, u16 v) { __asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { __asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port)); }
static inline u8 inb(u16 port)
{
	u8 v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void putc_serial(char c)
{
	/* wait for the transmitter, but never forever: a VMM without a UART reads 0xff */
	for (int i = 0; i < 100000 && !(inb(COM1 + 5) & 0x20); i++)
		;
	outb(COM1, (u8)c);
}

static void puts_serial(const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			putc_serial('\r');
		putc_serial(*s);
	}
}

/* The value of KEY=... in the command line, copied into out (at most n-1 bytes). */
static int arg(const char *cmdline, const char *key, char *out, int n)
{
	const char *p = cmdline;
	while (p && *p) {
		while (*p == ' ')
			p++;
		const char *k = key, *q = p;
		while (*k && *q == *k)
			k++, q++;
		if (!*k && *q == '=') {
			int i = 0;
			for (q++; *q && *q != ' ' && i < n - 1; q++)
				out[i++] = *q;
			out[i] = 0;
			return 1;
		}
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static inline u64 rdtsc(void)
{
	u32 lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}

static u32 base_mhz(void)
{
	u32 a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
	if (a < 0x16)
		return 2000;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x16), "c"(0));
	return (a & 0xffff) ? (a & 0xffff) : 2000;
}

static void put_hex(u64 v)
{
	char s[17];
	for (int i = 15; i >= 0; i--, v >>= 4)
		s[i] = "0123456789abcdef"[v & 0xf];
	s[16] = 0;
	puts_serial(s);
}

static void put_dec(u64 v)
{
	char s[21];
	int i = 20;
	s[i] = 0;
	do
		s[--i] = (char)('0' + v % 10);
	while (v /= 10);
	puts_serial(s + i);
}

static void beat(const char *name)
{
	u64 token = rdtsc(), period = (u64)base_mhz() * 2000, next = token;
	for (u64 seq = 1;; seq++) {
		puts_serial("VB-BEAT ");
		puts_serial(name);
		puts_serial(" ");
		put_hex(token);
		puts_serial(" ");
		put_dec(seq);
		puts_serial("\n");
		next += period;
		while ((long long)(rdtsc() - next) < 0)
			__asm__ volatile("pause");
		if ((long long)(rdtsc() - next) > (long long)period)
			next = rdtsc(); /* stopped for a while: count the period from now */
	}
}

/* Whether the memory map has RAM for [DIRTY_BASE, DIRTY_BASE + mib MiB) */
static int room(const struct hvm_start_info *si, u64 mib)
{
	u64 end = DIRTY_BASE + (mib << 20);
	if (end > MAPPED || !si || si->version < 1 || !si->memmap_paddr)
		return 0;
	const struct hvm_memmap_entry *e = (const void *)(unsigned long)si->memmap_paddr;
	for (u32 i = 0; i < si->memmap_entries; i++)
		if (e[i].type == 1 && e[i].addr <= DIRTY_BASE && e[i].addr + e[i].size >= end)
			return 1;
	return 0;
}

static void dirty(u64 mib)
{
	u64 x = 0x9e3779b97f4a7c15ull;
	volatile u64 *p = (volatile u64 *)(unsigned long)DIRTY_BASE;
	for (u64 i = 0; i < (mib << 17); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = x;
	}
}

static u64 number(const char *s)
{
	u64 v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (u64)(*s - '0');
	return v;
}

static void power_off(void)
{
	outl(0xf4, 0);
	outb(0x600, (5 << 2) | (1 << 5));
	outw(0x604, 1 << 13);
	outb(0x64, 0xfe);
}

void kmain(const struct hvm_start_info *si)
{
	const char *cmdline = "";
	char mode[16] = "hello", name[64] = "", mib[16] = "0";

	if (si && si->magic == START_MAGIC && si->cmdline_paddr)
		cmdline = (const char *)(unsigned long)si->cmdline_paddr;
	arg(cmdline, "vb.mode", mode, sizeof mode);
	arg(cmdline, "vb.name", name, sizeof name);
	arg(cmdline, "vb.dirty", mib, sizeof mib);

	puts_serial("vb-minikernel: ");
	puts_serial(mode);
	puts_serial("\n");
	if (same(mode, "sleep") || same(mode, "beat")) {
		if (number(mib)) {
			if (!room(si, number(mib))) {
				puts_serial("vb-minikernel: dirty: no room\n");
				for (;;)
					__asm__ volatile("cli; hlt");
			}
			dirty(number(mib));
		}
		puts_serial("VB-READY ");
		puts_serial(name);
		puts_serial("\n");
		if (same(mode, "beat"))
			beat(name);
	} else {
		puts_serial("VB-HELLO ");
		puts_serial(name);
		puts_serial("\n");
		power_off();
	}
	for (;;)
		__asm__ volatile("cli; hlt");
}
