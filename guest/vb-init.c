/* vb-init: PID 1 of virtbench's Linux guests (the initramfs's /init).
 *
 * Everything it needs comes from the kernel command line (/proc/cmdline):
 *   vb.name=NAME            the instance name (in the markers below)
 *   vb.mods=A,B,...         kernel modules to load first, in order (paths in the initramfs;
 *                           one that does not load is said, not fatal: a kernel of the
 *                           user's own has the drivers built in;
 *                           default: the paths listed in /lib/modules/vb/order, if any)
 *   vb.ip=ADDR/PREFIX       configure eth0 (and lo) with this address ...
 *   vb.gw=ADDR              ... and a default route through this gateway (the host bridge)
 *   ip=ADDR::GW:MASK:HOST:DEV:off   the kernel's own static form (nfsroot.rst), read
 *                           when there is no vb.ip: an image made with vb-init takes the
 *                           command line of a Linux image (preset "linux")
 *   vb.data=DEV             mount the block device /dev/DEV (ext4, made by the host) at
 *                           /data: the instance's data disk (fio's, a database's files)
 *   vb.argv=HEX             the workload's argv: its arguments, each followed by a NUL,
 *                           hex-encoded (so that no quoting survives the command line)
 *   vb.exit=isa|reboot|poweroff  how to end the VM when the workload exits: QEMU's
 *                           isa-debug-exit port 0xf4 (carries the status), a reboot
 *                           (Firecracker exits on the keyboard controller's reset,
 *                           with reboot=k) or a power-off (ACPI)
 *
 * It mounts /proc, /sys, /dev, /tmp and /run, loads the modules, mounts the data disk,
 * configures the network,
 * starts vb-agent (guest/vb-agent.c) on the virtio-serial port named vb.agent when the
 * VMM offers one (the host's way to run commands in it),
 * prints "VB-START NAME" on the console, runs the workload as its child with the console
 * as stdio, reaps every orphan, and when the workload ends prints "VB-EXIT NAME STATUS"
 * and powers the VM off. Any failure before the workload starts prints "VB-FAIL NAME why"
 * and powers off with status 70.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vb-hex.h"

#define MAX_ARGS 256
#define EX_SETUP 70
#define ISA_DEBUG_EXIT 0xf4

static char cmdline[4096];
static char name[128] = "?";
static char exit_mode[16] = "poweroff";

static const char *param(const char *key)
{
	size_t n = strlen(key);
	char *p = cmdline;

	while (p && *p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, n) == 0 && p[n] == '=')
			return p + n + 1;
		p = strchr(p, ' ');
	}
	return NULL;
}

/* A copy of the parameter's value (up to the next blank), or NULL. */
static char *value(const char *key, char *buf, size_t size)
{
	const char *v = param(key);
	size_t n;

	if (v == NULL)
		return NULL;
	n = strcspn(v, " \n");
	if (n >= size)
		n = size - 1;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return buf;
}

static void end_vm(int status)
{
	sync();
	if (strcmp(exit_mode, "isa") == 0 && ioperm(ISA_DEBUG_EXIT, 4, 1) == 0)
		outl((unsigned)status, ISA_DEBUG_EXIT); /* QEMU exits with (status << 1) | 1 */
	reboot(strcmp(exit_mode, "reboot") == 0 ? RB_AUTOBOOT : RB_POWER_OFF);
	for (;;)
		pause();
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("VB-FAIL %s ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	end_vm(EX_SETUP);
}

static void mount_or_fail(const char *src, const char *dst, const char *type, unsigned long flags)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, NULL) != 0 && errno != EBUSY)
		fail("mount %s: %s", dst, strerror(errno));
}

static void load_modules(void)
{
	static char mods[4096];
	char *save = NULL, *path;

	if (value("vb.mods", mods, sizeof(mods)) == NULL) {
		int fd = open("/lib/modules/vb/order", O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0)
			return;
		n = read(fd, mods, sizeof(mods) - 1);
		close(fd);
		mods[n > 0 ? n : 0] = '\0';
	}
	for (path = strtok_r(mods, ",\n", &save); path; path = strtok_r(NULL, ",\n", &save)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			fail("module %s: %s", path, strerror(errno));
		/* A kernel of the user's own refuses the Debian kernel's modules: it must have
		 * the drivers built in, and a missing one is said where it is needed (eth0). */
		if (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST)
			printf("VB-WARN %s module %s not loaded: %s\n", name, path, strerror(errno));
		close(fd);
	}
}

static void mount_data(void)
{
	char dev[64], path[80];
	int tries;

	if (value("vb.data", dev, sizeof(dev)) == NULL)
		return;
	if (strchr(dev, '/') != NULL)
		fail("bad vb.data %s", dev);
	snprintf(path, sizeof(path), "/dev/%s", dev);
	for (tries = 0; access(path, F_OK) != 0; tries++) { /* the driver probes it */
		if (tries == 500)
			fail("data disk %s: no such device after 5 s", path);
		usleep(10000);
	}
	mkdir("/data", 0777);
	if (mount(path, "/data", "ext4", MS_NOATIME, NULL) != 0)
		fail("mount %s on /data: %s", path, strerror(errno));
	chmod("/data", 0777);
}

static void set_addr(int fd, const char *ifname, unsigned long req, in_addr_t addr)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = addr;
	if (ioctl(fd, req, &ifr) != 0)
		fail("%s address: %s", ifname, strerror(errno));
}

static void link_up(int fd, const char *ifname)
{
	struct ifreq ifr = { 0 };

	strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
		fail("%s: %s", ifname, strerror(errno));
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
		fail("%s up: %s", ifname, strerror(errno));
}

/* The kernel's ip=CLIENT:SERVER:GW:MASK:HOST:DEV:AUTOCONF, as vb.ip (ADDR/PREFIX), vb.gw
 * and the device; 0 when there is none or it asks for no static address. */
static int kernel_ip(char *ip, size_t ipsize, char *gw, size_t gwsize, char *dev, size_t devsize)
{
	char buf[256], *field[7] = { 0 }, *p;
	struct in_addr mask;
	int n = 0, prefix = 24;

	if (value("ip", buf, sizeof(buf)) == NULL || strchr(buf, ':') == NULL)
		return 0; /* absent, or ip=dhcp / ip=off */
	for (p = buf; n < 7; n++) {
		field[n] = p;
		p = strchr(p, ':');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	if (field[0] == NULL || field[0][0] == '\0')
		return 0;
	if (field[3] && field[3][0] && inet_pton(AF_INET, field[3], &mask) == 1)
		prefix = __builtin_popcount(mask.s_addr);
	snprintf(ip, ipsize, "%s/%d", field[0], prefix);
	snprintf(gw, gwsize, "%s", field[2] ? field[2] : "");
	snprintf(dev, devsize, "%s", field[5] && field[5][0] ? field[5] : "eth0");
	return 1;
}

static void configure_network(void)
{
	char ip[64], gw[64] = "", dev[IFNAMSIZ] = "eth0", *slash;
	struct in_addr addr, gate;
	long prefix;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		fail("socket: %s", strerror(errno));
	link_up(fd, "lo");
	if (value("vb.ip", ip, sizeof(ip)) != NULL)
		value("vb.gw", gw, sizeof(gw));
	else if (!kernel_ip(ip, sizeof(ip), gw, sizeof(gw), dev, sizeof(dev))) {
		close(fd);
		return;
	}
	slash = strchr(ip, '/');
	prefix = slash ? strtol(slash + 1, NULL, 10) : 24;
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, ip, &addr) != 1 || prefix < 1 || prefix > 32)
		fail("bad address %s", ip);
	set_addr(fd, dev, SIOCSIFADDR, addr.s_addr);
	set_addr(fd, dev, SIOCSIFNETMASK, htonl(~0u << (32 - prefix)));
	link_up(fd, dev);
	if (gw[0]) {
		struct rtentry rt = { 0 };
		struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
		struct sockaddr_in *gwa = (struct sockaddr_in *)&rt.rt_gateway;
		struct sockaddr_in *mask = (struct sockaddr_in *)&rt.rt_genmask;

		if (inet_pton(AF_INET, gw, &gate) != 1)
			fail("bad gateway %s", gw);
		dst->sin_family = gwa->sin_family = mask->sin_family = AF_INET;
		gwa->sin_addr = gate;
		rt.rt_flags = RTF_UP | RTF_GATEWAY;
		/* EEXIST: the kernel made it already (ip= with CONFIG_IP_PNP) */
		if (ioctl(fd, SIOCADDRT, &rt) != 0 && errno != EEXIST)
			fail("default route: %s", strerror(errno));
	}
	close(fd);
}

/* vb.argv: hex of "arg0\0arg1\0...", decoded in place into argv. */
static int decode_argv(char *buf, size_t size, char **argv)
{
	const char *v = param("vb.argv");
	size_t n = 0;
	int argc = 0;

	if (v == NULL)
		fail("no vb.argv on the command line");
	while (unhex(v[0]) >= 0 && unhex(v[1]) >= 0) {
		if (n + 1 >= size)
			fail("vb.argv too long");
		buf[n++] = (char)(unhex(v[0]) << 4 | unhex(v[1]));
		v += 2;
	}
	if (n == 0 || buf[n - 1] != '\0')
		fail("vb.argv is not NUL-terminated hex");
	for (size_t i = 0; i < n && argc < MAX_ARGS - 1; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	argv[argc] = NULL;
	return argc;
}

/* The virtio-serial port named vb.agent, as /dev/vportNpM in `path`; its name arrives from
 * the host a moment after the driver loads. 0: none (no such port, or no ports at all). */
static int agent_port(char *path, size_t size)
{
	for (int tries = 0; tries < 100; tries++, usleep(10000)) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *e;

		if (d == NULL)
			return 0;
		while ((e = readdir(d)) != NULL) {
			char file[300], got[64] = "";
			int fd;
			ssize_t n;

			snprintf(file, sizeof(file), "/sys/class/virtio-ports/%s/name", e->d_name);
			fd = open(file, O_RDONLY | O_CLOEXEC);
			n = fd < 0 ? -1 : read(fd, got, sizeof(got) - 1);
			if (fd >= 0)
				close(fd);
			if (n > 0 && strncmp(got, "vb.agent", 8) == 0 && (got[8] == '\n' || got[8] == 0) &&
			    strlen(e->d_name) + 6 <= size) {
				memcpy(path, "/dev/", 5);
				memcpy(path + 5, e->d_name, strlen(e->d_name) + 1);
				closedir(d);
				return 1;
			}
		}
		closedir(d);
	}
	return 0;
}

static void start_agent(char *const envp[])
{
	static char path[128];

	/* vb.agent=vsock:PORT (Firecracker, Cloud Hypervisor), else QEMU's virtio-serial port */
	if (value("vb.agent", path, sizeof(path)) == NULL && !agent_port(path, sizeof(path)))
		return;
	if (fork() == 0) {
		char *argv[] = { "/bin/vb-agent", path, NULL };

		execve(argv[0], argv, envp);
		printf("VB-FAIL %s exec /bin/vb-agent: %s\n", name, strerror(errno));
		_exit(127);
	}
}

int main(void)
{
	static char argbuf[4096];
	char *argv[MAX_ARGS];
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TERM=linux", NULL };
	int fd, status = 0;
	pid_t child, pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	mount_or_fail("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);
	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cmdline, sizeof(cmdline) - 1);

		cmdline[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	value("vb.name", name, sizeof(name));
	value("vb.exit", exit_mode, sizeof(exit_mode));
	mount_or_fail("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC);
	mount_or_fail("devtmpfs", "/dev", "devtmpfs", MS_NOSUID);
	mount_or_fail("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV);
	mount_or_fail("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV);
	load_modules();
	mount_data();
	configure_network();
	decode_argv(argbuf, sizeof(argbuf), argv);
	start_agent(envp);
	printf("VB-START %s\n", name);
	child = fork();
	if (child < 0)
		fail("fork: %s", strerror(errno));
	if (child == 0) {
		execve(argv[0], argv, envp);
		printf("VB-FAIL %s exec %s: %s\n", name, argv[0], strerror(errno));
		_exit(127);
	}
	for (;;) { /* PID 1 reaps every orphan; the workload's end ends the VM */
		int st;

		pid = wait(&st);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0 || pid == child) {
			status = pid < 0 ? EX_SETUP : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
	}
	printf("VB-EXIT %s %d\n", name, status);
	end_vm(status);
	return 0;
}
