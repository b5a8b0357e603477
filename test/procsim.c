/* SPDX-License-Identifier: Apache-2.0 */
/* procsim - a scriptable process side for the agent tests: one command a
 * line on stdin, one reply line on stdout ("ok ..." or "err <errno> ...").
 *
 *   init CONSUMER [MAX_LEASE_MS] procctl_init (optionally clamping leases to
 *                                at most MAX_LEASE_MS); prints "ok FD"
 *   initev CONSUMER              the same with PROCCTL_EVENT_FD
 *   evwait MS                    epoll_wait on procctl_event_fd up to MS,
 *                                then procctl_event_read: "ok N" (N read)
 *   evlease MS                   evwait, with procctl_lease_expired the
 *                                moment it woke: "ok N EXPIRED"
 *   evbad KIND                   name another fd as the event socket in the
 *                                header (CRC fixed): pipe, file (/dev/null),
 *                                dgram (a SOCK_DGRAM socketpair), unconnected
 *                                (a SOCK_SEQPACKET socket), closed (fd 999),
 *                                negative (-5); or one the agent uses: a
 *                                good socketpair end in a 1.0 header (v10)
 *                                or with an unknown flag bit (flags), a
 *                                listening socket of its own (listening)
 *   hostile MODE                 a region an agent must refuse (see below);
 *                                prints "ok FD"
 *   poll                         "ok N GEN PAYLOAD" | "ok 0" | "err E"
 *   ack GEN | nack GEN ERR       acks
 *   state TEXT                   procctl_state_set
 *   statehex HEX                 procctl_state_set of the bytes HEX spells
 *                                (up to 1024: a schema's struct, forged)
 *   report KIND BYTE STATE FLAGS procctl_resource_report of resource (KIND,
 *                                id BYTE then zeros), no grant snapshot
 *   forgeres KIND BYTE STATE FLAGS  resource entry 0 as report's, written
 *                                into the state block directly, with no
 *                                grant (HOLDING too: a hostile process)
 *   forgeack GEN                 write acked_gen GEN (applied) into the state
 *                                block directly, CRC and all, without a
 *                                doorbell wake: an ack procctl_ack would
 *                                refuse (a hostile process), or one nobody
 *                                rang for
 *   seal                         add the region's seals (after hostile late)
 *   sealfuture                   the same with FUTURE_WRITE: a wrong set
 *   scribble                     overwrite the region's header (page 0)
 *                                with garbage through the fd
 *   ring N                       FUTEX_WAKE the ack doorbell N times
 *   bellword                     write 1 to the doorbell word (through a
 *                                writable mapping of its own region)
 *   swapfd                       replace the region's fd number with another
 *                                procctl memfd (the scan saw the old one)
 *   punch                        punch the whole region (FALLOC_FL_PUNCH_HOLE)
 *   stall                        put the state block behind a userfaultfd
 *                                page nobody serves
 *   fork                         fork a child that keeps the region's fd
 *                                and the state block; prints "ok PID"
 *   forkreinit                   the same, the child calls procctl_reinit;
 *                                prints "ok PID FD"
 *   lease                        "ok 1" expired, "ok 0" live
 *   exec                         exec sleep: same pid, new image
 *   exit                         leave
 *
 * Hostile modes: unsealed, writeseal, futurewrite, execseal (F_SEAL_EXEC
 * added to an executable memfd: Linux 6.3+ adds WRITE with it), hugetlb, toobig,
 * badmagic, badversion, badlayout, mismatch (name echo, header other),
 * badstate (state CRC), badinstance (state instance id); with two faults,
 * whose reason the order of the checks decides (SPEC.md 13.2): writeonly
 * (WRITE, the rest missing), badversioncrc (major version and header CRC),
 * badinstancecrc (state instance id and CRC); and late: a valid
 * region whose seals are still missing, as inside procctl_init, until seal.
 */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "reply.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004u
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010u /* Linux 6.3; older libc headers lack it */
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

static procctl_t ctx;
#define STATE_CAP 1024u /* the state bytes: a forged schema struct fits */

static unsigned char *storage; /* page aligned, so stall can drop it whole */
static int region_fd = -1;

static unsigned init_flags; /* procctl_config_t.flags of the next init */

static int do_init(const char *consumer)
{
	procctl_config_t cfg;
	char name[64];
	unsigned max_ms = 0;
	int err;
	memset(&cfg, 0, sizeof cfg);
	if (sscanf(consumer, "%63s %u", name, &max_ms) >= 1)
		consumer = name;
	cfg.lease_max_ns = (uint64_t)max_ms * 1000000ull;
	cfg.consumer = consumer;
	cfg.schema_version = 1;
	cfg.payload_capacity = 4096;
	cfg.state_capacity = STATE_CAP;
	cfg.resource_capacity = 4;
	cfg.state_storage = storage;
	cfg.flags = init_flags;
	err = procctl_init(&ctx, &cfg);
	region_fd = err ? -1 : procctl_fd(&ctx);
	return err;
}

/* Rewrite header bytes through the fd (no WRITE seal stops the process)
 * and fix the header CRC, so the agent's later checks are the ones hit. */
static void patch_header(size_t off, const void *v, size_t n, int fix_crc)
{
	struct procctl_hdr h;
	if (pread(region_fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
		abort();
	memcpy((unsigned char *)&h + off, v, n);
	if (fix_crc) {
		h.header_crc = 0;
		h.header_crc = procctl_crc32c(0, &h, sizeof h);
	}
	if (pwrite(region_fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
		abort();
}

/* A bare memfd named like a region, with the seals given; a valid header
 * is copied from a real region so only the seals (or size) are wrong. */
static int bare_region(unsigned mfd_flags, int seals, off_t size)
{
	unsigned char hdr[256];
	int fd;
	if (do_init("scratch") < 0 || pread(region_fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr)
		return -EIO;
	fd = (int)syscall(SYS_memfd_create, "procctl:test-v1", MFD_CLOEXEC | mfd_flags);
	if (fd < 0)
		return -errno;
	if (!(mfd_flags & MFD_HUGETLB)) {
		if (ftruncate(fd, size) < 0 || pwrite(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr)
			return -errno;
	}
	if (seals && fcntl(fd, F_ADD_SEALS, seals) < 0)
		return -errno;
	return fd;
}

/* Replace the region's fd with an unsealed copy of it. */
static int late_region(void)
{
	unsigned char page[4096];
	struct procctl_hdr h;
	uint64_t off;
	int m = (int)syscall(SYS_memfd_create, "procctl:test-v1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0 || pread(region_fd, &h, sizeof h, 0) != (ssize_t)sizeof h || ftruncate(m, (off_t)h.region_size) < 0)
		return -errno;
	for (off = 0; off < h.region_size; off += sizeof page)
		if (pread(region_fd, page, sizeof page, (off_t)off) != (ssize_t)sizeof page ||
		    pwrite(m, page, sizeof page, (off_t)off) != (ssize_t)sizeof page)
			return -errno;
	if (dup3(m, region_fd, O_CLOEXEC) < 0)
		return -errno;
	close(m);
	return 0;
}

static void do_hostile(const char *mode)
{
	uint64_t v64;
	uint32_t v32;
	int fd = -1;

	if (!strcmp(mode, "unsealed"))
		fd = bare_region(MFD_ALLOW_SEALING, 0, 16384);
	else if (!strcmp(mode, "writeseal"))
		fd = bare_region(MFD_ALLOW_SEALING, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL, 16384);
	else if (!strcmp(mode, "writeonly")) /* two faults: WRITE, and SHRINK, GROW, SEAL missing */
		fd = bare_region(MFD_ALLOW_SEALING, F_SEAL_WRITE, 16384);
	else if (!strcmp(mode, "futurewrite"))
		fd = bare_region(MFD_ALLOW_SEALING, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL,
				 16384);
	else if (!strcmp(mode, "execseal")) /* an executable memfd: the kernel adds WRITE (6.3+) */
		fd = bare_region(MFD_ALLOW_SEALING | MFD_EXEC, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_EXEC | F_SEAL_SEAL,
				 16384);
	else if (!strcmp(mode, "hugetlb"))
		fd = bare_region(MFD_HUGETLB | MFD_ALLOW_SEALING, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, 0);
	else if (!strcmp(mode, "toobig"))
		fd = bare_region(MFD_ALLOW_SEALING, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, 8 << 20);
	if (fd != -1) {
		if (fd < 0) {
			reply("err %d %s", -fd, strerror(-fd));
			return;
		}
		reply("ok %d", fd);
		return;
	}
	if (do_init(!strcmp(mode, "mismatch") ? "other" : "test") < 0) {
		reply("err %d init", errno);
		return;
	}
	if (!strcmp(mode, "badmagic")) {
		v64 = 0x1234;
		patch_header(offsetof(struct procctl_hdr, magic), &v64, 8, 1);
	} else if (!strcmp(mode, "badversion") || !strcmp(mode, "badversioncrc")) {
		uint16_t v16 = 9; /* badversioncrc: and the CRC left as it was, a second fault */
		patch_header(offsetof(struct procctl_hdr, version_major), &v16, 2, !strcmp(mode, "badversion"));
	} else if (!strcmp(mode, "badlayout")) {
		v32 = 0x7fffffc0u; /* a slot far outside the file */
		patch_header(offsetof(struct procctl_hdr, slot_off[1]), &v32, 4, 1);
	} else if (!strcmp(mode, "mismatch")) {
		/* name "procctl:test-v1", header consumer "other": make a new
		 * memfd with the test name and this header */
		unsigned char hdr[256];
		int m = (int)syscall(SYS_memfd_create, "procctl:test-v1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		struct procctl_hdr h;
		if (m < 0 || pread(region_fd, hdr, sizeof hdr, 0) != 256) {
			reply("err %d mismatch", errno);
			return;
		}
		memcpy(&h, hdr, sizeof h);
		if (ftruncate(m, (off_t)h.region_size) < 0 || pwrite(m, hdr, sizeof hdr, 0) != 256 ||
		    fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
			reply("err %d mismatch", errno);
			return;
		}
		reply("ok %d", m);
		return;
	} else if (!strcmp(mode, "badstate")) {
		struct procctl_state_hdr *st = (void *)(((uintptr_t)storage + 7u) & ~(uintptr_t)7u);
		st->crc ^= 1;
	} else if (!strcmp(mode, "badinstance") || !strcmp(mode, "badinstancecrc")) {
		struct procctl_state_hdr *st = (void *)(((uintptr_t)storage + 7u) & ~(uintptr_t)7u);
		st->instance_id ^= 1;
		if (!strcmp(mode, "badinstance")) /* badinstancecrc: the CRC wrong too */
			st->crc = procctl_crc32c(0, (unsigned char *)st + PROCCTL_STATE_CRC_OFF,
						 sizeof *st + 4u * sizeof(struct procctl_res_entry) - PROCCTL_STATE_CRC_OFF);
	} else if (!strcmp(mode, "late")) {
		int err = late_region();
		if (err) {
			reply("err %d late", -err);
			return;
		}
	} else if (strcmp(mode, "valid")) {
		reply("err %d unknown mode", EINVAL);
		return;
	}
	reply("ok %d", region_fd);
}

/* The state block's page: dropped, then registered with userfaultfd in
 * MISSING mode and never served. Any read of it blocks forever. */
static void do_stall(void)
{
	struct uffdio_api api = {UFFD_API, 0, 0};
	struct uffdio_register reg;
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0) {
		reply("err %d userfaultfd", errno);
		return;
	}
	if (madvise(storage, 4096, MADV_DONTNEED) < 0) {
		reply("err %d madvise", errno);
		return;
	}
	memset(&reg, 0, sizeof reg);
	reg.range.start = (uintptr_t)storage;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		reply("err %d register", errno);
		return;
	}
	reply("ok");
}

/* A command's reply when it has nothing to print: "ok", or "err E". */
static void done(int err)
{
	if (err)
		reply("err %d", -err);
	else
		reply("ok");
}

static void cmd_init(const char *cmd, char *arg)
{
	int err;
	init_flags = !strcmp(cmd, "initev") ? PROCCTL_EVENT_FD : 0;
	err = do_init(arg);
	if (err)
		reply("err %d init", -err);
	else
		reply("ok %d", region_fd);
}

static void cmd_hostile(const char *cmd, char *arg)
{
	(void)cmd;
	do_hostile(arg);
}

static void cmd_poll(const char *cmd, char *arg)
{
	static char buf[4097];
	uint64_t gen = 0;
	int n = procctl_poll(&ctx, buf, sizeof buf - 1, &gen);
	(void)cmd, (void)arg;
	if (n > 0) {
		buf[n] = 0;
		reply("ok %d %llu %s", n, (unsigned long long)gen, buf);
	} else if (n == 0) {
		reply("ok 0");
	} else {
		reply("err %d %llu", -n, (unsigned long long)gen);
	}
}

static void cmd_ack(const char *cmd, char *arg)
{
	unsigned long long gen = 0;
	int e = 0;
	sscanf(arg, "%llu %d", &gen, &e);
	done(cmd[0] == 'a' ? procctl_ack(&ctx, gen, 0) : procctl_nack(&ctx, gen, e, 0));
}

static void cmd_state(const char *cmd, char *arg)
{
	static uint8_t buf[STATE_CAP];
	size_t n = 0, len = strlen(arg);
	unsigned b;
	if (strcmp(cmd, "statehex")) {
		done(procctl_state_set(&ctx, arg, len, 0));
		return;
	}
	if (len % 2 || len / 2 > sizeof buf || strspn(arg, "0123456789abcdefABCDEF") != len) {
		done(-EINVAL);
		return;
	}
	for (; n < len / 2 && sscanf(arg + 2 * n, "%2x", &b) == 1; n++)
		buf[n] = (uint8_t)b;
	done(procctl_state_set(&ctx, buf, n, 0));
}

static void cmd_report(const char *cmd, char *arg)
{
	unsigned kind = 0, byte = 0, state = 0, flags = 0;
	uint8_t id[PROCCTL_ID_SIZE] = {0};
	int err = sscanf(arg, "%u %x %u %u", &kind, &byte, &state, &flags) == 4 ? 0 : -EINVAL;
	(void)cmd;
	id[0] = (uint8_t)byte;
	if (!err)
		err = procctl_resource_report(&ctx, kind, id, state, flags, NULL, 0);
	done(err);
}

/* Entry 0 of the resource table written directly, as report's arguments
 * say, with no grant: what procctl_resource_report refuses (HOLDING with
 * no usable grant), as a hostile process writes it. */
static void cmd_forgeres(const char *cmd, char *arg)
{
	unsigned kind = 0, byte = 0, state = 0, flags = 0;
	int err = sscanf(arg, "%u %x %u %u", &kind, &byte, &state, &flags) == 4 ? 0 : -EINVAL;
	(void)cmd;
	if (!err && !(err = procctl__state_begin(&ctx, 0))) {
		struct procctl_res_entry *e = (struct procctl_res_entry *)(void *)(ctx.state_ + 1);
		memset(e, 0, sizeof *e);
		e->kind = kind;
		e->id[0] = (uint8_t)byte;
		e->state = state;
		e->flags = flags;
		procctl__state_end(&ctx);
	}
	done(err);
}

static void cmd_forgeack(const char *cmd, char *arg)
{
	int err = procctl__state_begin(&ctx, 0);
	(void)cmd;
	if (!err) {
		ctx.state_->acked_gen = strtoull(arg, NULL, 10);
		ctx.state_->ack_status = 0;
		procctl__state_end(&ctx);
	}
	done(err);
}

static void cmd_ring(const char *cmd, char *arg)
{
	long i, n = atol(arg);
	(void)cmd;
	for (i = 0; i < n; i++)
		syscall(SYS_futex, &ctx.ctrl_->doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	reply("ok");
}

static void cmd_bellword(const char *cmd, char *arg)
{
	struct procctl_hdr h;
	unsigned char *m;
	(void)cmd, (void)arg;
	if (pread(region_fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
		done(-EIO);
		return;
	}
	m = mmap(NULL, (size_t)h.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd, 0);
	if (m == MAP_FAILED) {
		done(-errno);
		return;
	}
	__atomic_store_n((uint32_t *)(m + h.ctrl_off + offsetof(struct procctl_ctrl, doorbell)), 1u, __ATOMIC_RELAXED);
	done(0);
}

static void cmd_scribble(const char *cmd, char *arg)
{
	unsigned char junk[sizeof(struct procctl_hdr)];
	(void)cmd, (void)arg;
	memset(junk, 0xa5, sizeof junk);
	done(pwrite(region_fd, junk, sizeof junk, 0) != (ssize_t)sizeof junk ? -errno : 0);
}

static void cmd_seal(const char *cmd, char *arg)
{
	int future = !strcmp(cmd, "sealfuture") ? F_SEAL_FUTURE_WRITE : 0;
	(void)arg;
	done(fcntl(region_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL | future) < 0 ? -errno : 0);
}

static void cmd_swapfd(const char *cmd, char *arg)
{
	int other = (int)syscall(SYS_memfd_create, "procctl:test-v1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	(void)cmd, (void)arg;
	done(other < 0 || dup3(other, region_fd, O_CLOEXEC) < 0 ? -errno : 0);
}

static void cmd_punch(const char *cmd, char *arg)
{
	struct procctl_hdr h;
	(void)cmd, (void)arg;
	if (pread(region_fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
		done(-EIO);
		return;
	}
	if (fallocate(region_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)h.region_size) < 0) {
		done(-errno);
		return;
	}
	done(0);
}

static void cmd_stall(const char *cmd, char *arg)
{
	(void)cmd, (void)arg;
	do_stall();
}

static void cmd_evwait(const char *cmd, char *arg)
{
	struct pollfd p = {procctl_event_fd(&ctx), POLLIN, 0};
	int n;
	(void)cmd;
	if ((n = poll(&p, 1, atoi(arg))) <= 0) {
		done(n < 0 ? -errno : -ETIMEDOUT);
		return;
	}
	n = procctl_event_read(&ctx);
	if (n < 0)
		done(n);
	else
		reply("ok %d", n);
}

/* evwait, and the lease the moment it woke: "ok N EXPIRED". */
static void cmd_evlease(const char *cmd, char *arg)
{
	struct pollfd p = {procctl_event_fd(&ctx), POLLIN, 0};
	int n, expired;
	(void)cmd;
	if ((n = poll(&p, 1, atoi(arg))) <= 0) {
		done(n < 0 ? -errno : -ETIMEDOUT);
		return;
	}
	expired = procctl_lease_expired(&ctx, 0);
	n = procctl_event_read(&ctx);
	if (n < 0)
		done(n);
	else
		reply("ok %d %d", n, expired);
}

/* The header names fd, an fd of the kind given, as the event socket. */
static void cmd_evbad(const char *cmd, char *arg)
{
	int32_t fd = -1, sv[2];
	uint32_t flags = PROCCTL_HDR_EVENT_FD;
	uint16_t minor0 = 0;
	int named = 0; /* fd is what the header names, even negative */
	(void)cmd;
	if ((!strcmp(arg, "v10") || !strcmp(arg, "flags")) && socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0) {
		fd = sv[1]; /* a good socket, in a 1.0 header or beside an unknown flag bit */
		if (arg[0] == 'v')
			patch_header(offsetof(struct procctl_hdr, version_minor), &minor0, 2, 0);
		else
			flags |= 0x80000000u;
	} else if (!strcmp(arg, "listening") && (fd = socket(AF_UNIX, SOCK_SEQPACKET, 0)) >= 0) {
		struct sockaddr_un a = {.sun_family = AF_UNIX}; /* abstract: "\0procsim-PID" */
		int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "procsim-%d", (int)getpid());
		if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0 ||
		    listen(fd, 1) < 0) {
			close(fd);
			fd = -1;
		}
	} else if (!strcmp(arg, "negative")) {
		fd = -5;
		named = 1;
	} else if (!strcmp(arg, "pipe") && pipe(sv) == 0)
		fd = sv[1];
	else if (!strcmp(arg, "file"))
		fd = open("/dev/null", O_WRONLY);
	else if (!strcmp(arg, "dgram") && socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0)
		fd = sv[1];
	else if (!strcmp(arg, "unconnected"))
		fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	else if (!strcmp(arg, "closed"))
		fd = 999;
	if (fd < 0 && !named) {
		done(-EINVAL);
		return;
	}
	patch_header(offsetof(struct procctl_hdr, flags), &flags, 4, 0);
	patch_header(offsetof(struct procctl_hdr, event_fd), &fd, 4, 1);
	reply("ok %d", (int)fd);
}

/* The child prints its reply; the parent prints none. */
static void cmd_fork(const char *cmd, char *arg)
{
	pid_t pid = fork();
	(void)arg;
	if (pid < 0) {
		done(-errno);
		return;
	}
	if (pid > 0)
		return;
	if (!strcmp(cmd, "forkreinit")) {
		if (procctl_reinit(&ctx) < 0)
			_exit(1);
		printf("ok %d %d\n", (int)getpid(), procctl_fd(&ctx));
	} else {
		printf("ok %d\n", (int)getpid());
	}
	fflush(stdout);
	for (;;)
		pause();
}

static void cmd_lease(const char *cmd, char *arg)
{
	(void)cmd, (void)arg;
	reply("ok %d", procctl_lease_expired(&ctx, 0));
}

static void cmd_exec(const char *cmd, char *arg)
{
	(void)cmd, (void)arg;
	reply("ok");
	execlp("sleep", "sleep", "1000", (char *)NULL);
	_exit(127);
}

static const struct command {
	const char *name;
	void (*run)(const char *cmd, char *arg);
} commands[] = {
	{"init", cmd_init}, {"initev", cmd_init}, {"evwait", cmd_evwait}, {"evlease", cmd_evlease},
	{"evbad", cmd_evbad}, {"hostile", cmd_hostile}, {"poll", cmd_poll}, {"ack", cmd_ack},
	{"nack", cmd_ack}, {"state", cmd_state}, {"statehex", cmd_state}, {"report", cmd_report}, {"forgeack", cmd_forgeack}, {"forgeres", cmd_forgeres},
	{"ring", cmd_ring}, {"bellword", cmd_bellword}, {"scribble", cmd_scribble}, {"seal", cmd_seal},
	{"sealfuture", cmd_seal}, {"swapfd", cmd_swapfd}, {"punch", cmd_punch}, {"stall", cmd_stall},
	{"fork", cmd_fork}, {"forkreinit", cmd_fork}, {"lease", cmd_lease}, {"exec", cmd_exec},
};

int main(void)
{
	static char line[8192];
	storage = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (storage == MAP_FAILED)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	while (fgets(line, sizeof line, stdin)) {
		char *arg = strchr(line, ' ');
		size_t i;
		line[strcspn(line, "\n")] = 0;
		if (arg)
			*arg++ = 0;
		else
			arg = line + strlen(line);
		if (!strcmp(line, "exit"))
			break;
		for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (!strcmp(line, commands[i].name))
				break;
		if (i < sizeof commands / sizeof commands[0])
			commands[i].run(line, arg);
		else
			reply("err %d unknown %s", EINVAL, line);
	}
	return 0;
}
