/* SPDX-License-Identifier: Apache-2.0 */
/* agentsim - a scriptable agent for the tests. It attaches to a process's
 * region exactly as an agent does (pidfd_open, pidfd_getfd, map read/write)
 * and writes through core/region.c; it can also forge hostile writes.
 * One command per line on stdin, one reply line on stdout: "ok [value]" or
 * "err <errno> <what>".
 *
 *   attach PID FD              fetch FD of PID with pidfd_getfd and map it
 *   claim DOMAIN EPOCH LEASE   claim; prints the generation
 *   publish TEXT | publishfill LEN BYTE | clear | uninstall | release
 *   hb                         move the heartbeat
 *   lease NS
 *   grant KIND IDHEX GRANTID | revoke KIND IDHEX | drop KIND IDHEX
 *   forge KEY=VAL...           write a slot with overridden fields
 *                              (gen config_gen epoch flags length ngrants
 *                              crc, payload=TEXT), CRC recomputed unless
 *                              given; the rest as the agent's copies say
 *   begin                      enter a write section, scribble on the
 *                              inactive slot, stay inside
 *   flood                      publish self-checking payloads until killed
 *   config                     the config this agent holds (adopted or
 *                              published), as hex
 *   readstate [PID]            process_vm_readv + check the state block
 *                              (of PID instead of the attached process)
 *   exit                       leave
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flood.h"
#include "procctl.h"
#include "region.h"
#include "reply.h"
#include "state.h"

static struct procctl_region R;
static pid_t target;

static void reply_gen(int64_t g)
{
	if (g < 0)
		reply("err %d %s", (int)-g, strerror((int)-g));
	else
		reply("ok %" PRId64, g);
}

static int unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	while (s[0] && s[1] && n < max) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return (int)n;
}

/* KIND (a number) and ID (hex). */
static int parse_res(char *kind, char *idhex, procctl_resource_t *res)
{
	char *end;
	unsigned long k;
	memset(res, 0, sizeof *res);
	if (!kind || !idhex)
		return -1;
	k = strtoul(kind, &end, 10);
	if (*end || !k || k > UINT32_MAX)
		return -1;
	res->kind = (uint32_t)k;
	return unhex(idhex, res->id, sizeof res->id) < 0 ? -1 : 0;
}

static void cmd_attach(char *args)
{
	int pid, fd, pidfd, mfd, err;
	enum procctl_reject why;
	if (sscanf(args, "%d %d", &pid, &fd) != 2) {
		reply("err %d usage", EINVAL);
		return;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		reply("err %d pidfd_open", errno);
		return;
	}
	mfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (mfd < 0) {
		reply("err %d pidfd_getfd", errno);
		return;
	}
	{
		struct stat st;
		err = fstat(mfd, &st) < 0 ? -errno : procctl_region_map(&R, mfd, (uint64_t)st.st_size, &why);
	}
	close(mfd);
	if (err) {
		reply("err %d map %s", -err, procctl_reject_name(why));
		return;
	}
	target = pid;
	reply("ok");
}

/* Enter a write section by hand (forged writes bypass region.c). */
static uint32_t raw_begin(void)
{
	uint32_t s = procctl__load_relaxed(&R.ctrl->seq);
	procctl__store_relaxed(&R.ctrl->seq, s | 1u);
	procctl__smp_wmb();
	return s | 1u;
}

static void raw_end(uint32_t odd)
{
	procctl__smp_store_release(&R.ctrl->seq, odd + 1u);
	syscall(SYS_futex, &R.ctrl->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void cmd_forge(char *args)
{
	unsigned char *b = R.map + R.hdr.slot_off[(R.active ^ 1u) & 1u];
	struct procctl_slot s;
	const char *payload = (const char *)R.payload;
	size_t plen = R.length;
	int have_crc = 0, have_len = 0, have_cgen = 0, have_payload = 0;
	uint32_t crc, odd;
	char *tok, *save = NULL;

	memset(&s, 0, sizeof s);
	s.gen = R.gen + 1u;
	s.epoch = PROCCTL_OWNER_EPOCH(R.owner);
	s.flags = R.slot_flags;
	s.length = R.length;
	for (tok = strtok_r(args, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		unsigned long long v;
		if (!eq) {
			reply("err %d bad token %s", EINVAL, tok);
			return;
		}
		*eq++ = 0;
		if (!strcmp(tok, "payload")) {
			payload = eq;
			plen = strlen(eq);
			have_payload = 1;
			continue;
		}
		v = strtoull(eq, NULL, 0);
		if (!strcmp(tok, "gen"))
			s.gen = v;
		else if (!strcmp(tok, "config_gen"))
			s.config_gen = v, have_cgen = 1;
		else if (!strcmp(tok, "epoch"))
			s.epoch = (uint32_t)v;
		else if (!strcmp(tok, "flags"))
			s.flags = (uint32_t)v;
		else if (!strcmp(tok, "length"))
			s.length = (uint32_t)v, have_len = 1;
		else if (!strcmp(tok, "ngrants"))
			s.ngrants = (uint32_t)v;
		else if (!strcmp(tok, "crc"))
			s.crc = (uint32_t)v, have_crc = 1;
		else {
			reply("err %d unknown field %s", EINVAL, tok);
			return;
		}
	}
	if (!have_len)
		s.length = (uint32_t)plen;
	/* A new payload is a new config unless told otherwise. */
	if (!have_cgen)
		s.config_gen = have_payload ? s.gen : R.config_gen;
	if (plen > R.hdr.payload_cap)
		plen = R.hdr.payload_cap;
	if (!have_crc) {
		size_t n = s.length < R.hdr.payload_cap ? s.length : R.hdr.payload_cap;
		crc = procctl_crc32c(0, &R.hdr.instance_id, 8);
		crc = procctl_crc32c(crc, &s, PROCCTL_SLOT_CRC_BYTES);
		crc = procctl_crc32c(crc, b + R.hdr.grant_off,
				     (size_t)(s.ngrants < R.hdr.grant_cap ? s.ngrants : R.hdr.grant_cap) *
					     sizeof(struct procctl_grant_entry));
		crc = procctl_crc32c(crc, payload, n < plen ? n : plen);
		s.crc = crc;
	}
	odd = raw_begin();
	memcpy(b, &s, sizeof s);
	if (plen)
		memcpy(b + R.hdr.payload_off, payload, plen);
	R.active ^= 1u;
	procctl__store_relaxed(&R.ctrl->active, R.active);
	raw_end(odd);
	/* Keep region.c's copies in step so later honest writes go on. */
	R.seq = odd + 1u;
	R.gen = s.gen > R.gen ? s.gen : R.gen;
	reply("ok");
}

static void cmd_begin(void)
{
	unsigned char *b = R.map + R.hdr.slot_off[(R.active ^ 1u) & 1u];
	raw_begin();
	memset(b, 0xa5, R.hdr.slot_size / 2u);
	reply("ok");
}

/* Self-checking payloads (flood.h) until killed. */
static void cmd_flood(void)
{
	static unsigned char buf[PROCCTL_PAYLOAD_MAX];
	uint64_t i;
	reply("ok");
	for (i = 1;; i++)
		if (procctl_region_publish(&R, buf, flood_fill(i, buf, R.hdr.payload_cap)) < 0)
			_exit(3);
}

/* readstate [PID]: the agent's read of the state block. */
static void cmd_readstate(char *args)
{
	static uint64_t buf[(PROCCTL_STATE_DATA_MAX + PROCCTL_RES_MAX * 64u + 4096u) / 8u];
	struct procctl_state_view v;
	enum procctl_reject why;
	static char out[200000];
	size_t n = 0;
	uint32_t i;
	int err = procctl_state_read(*args ? (pid_t)atoi(args) : target, -1, &R.hdr, buf, &v, &why);

	if (err) {
		reply("err %d %s", -err, err == -EPROTO ? procctl_reject_name(why) : strerror(-err));
		return;
	}
	n += (size_t)snprintf(out + n, sizeof out - n, "acked=%" PRIu64 " status=%d data=", v.acked_gen,
			      v.ack_status);
	for (i = 0; i < v.data_len; i++)
		n += (size_t)snprintf(out + n, sizeof out - n, "%02x", v.data[i]);
	n += (size_t)snprintf(out + n, sizeof out - n, " res=");
	for (i = 0; i < v.nres; i++) {
		const struct procctl_res_entry *e = &v.res[i];
		if (!e->kind)
			continue;
		n += (size_t)snprintf(out + n, sizeof out - n, "%u:%" PRIu64 ":%" PRIu64 ":%u:%u,", e->kind,
				      e->grant_id, e->seen_gen, e->state, e->flags);
	}
	reply("ok %s", out);
}

int main(void)
{
	static char line[70000];
	while (fgets(line, sizeof line, stdin)) {
		char *cmd = line, *args;
		procctl_resource_t res;
		line[strcspn(line, "\n")] = 0;
		args = strchr(line, ' ');
		if (args)
			*args++ = 0;
		else
			args = line + strlen(line);
		if (!strcmp(cmd, "attach")) {
			cmd_attach(args);
		} else if (!R.map) {
			reply("err %d not attached", ENOTCONN);
		} else if (!strcmp(cmd, "claim")) {
			unsigned dom, ep;
			unsigned long long lease;
			if (sscanf(args, "%u %u %llu", &dom, &ep, &lease) != 3)
				reply("err %d usage", EINVAL);
			else
				reply_gen(procctl_region_claim(&R, dom, ep, lease));
		} else if (!strcmp(cmd, "publish")) {
			reply_gen(procctl_region_publish(&R, args, (uint32_t)strlen(args)));
		} else if (!strcmp(cmd, "publishfill")) {
			static unsigned char buf[PROCCTL_PAYLOAD_MAX + 1];
			unsigned len, byte;
			if (sscanf(args, "%u %u", &len, &byte) != 2 || len > sizeof buf)
				reply("err %d usage", EINVAL);
			else
				reply_gen(procctl_region_publish(&R, memset(buf, (int)byte, len), len));
		} else if (!strcmp(cmd, "clear")) {
			reply_gen(procctl_region_clear(&R));
		} else if (!strcmp(cmd, "uninstall")) {
			reply_gen(procctl_region_uninstall(&R));
		} else if (!strcmp(cmd, "release")) {
			reply_gen(procctl_region_release(&R));
		} else if (!strcmp(cmd, "hb")) {
			procctl_region_heartbeat(&R);
			reply("ok");
		} else if (!strcmp(cmd, "lease")) {
			reply_gen(procctl_region_set_lease(&R, strtoull(args, NULL, 0)));
		} else if (!strcmp(cmd, "grant") || !strcmp(cmd, "revoke") || !strcmp(cmd, "drop")) {
			char *save = NULL, *kind = strtok_r(args, " ", &save), *id = strtok_r(NULL, " ", &save);
			char *gid = strtok_r(NULL, " ", &save);
			if (parse_res(kind, id, &res) < 0 || (cmd[0] == 'g' && !gid))
				reply("err %d usage", EINVAL);
			else if (cmd[0] == 'g')
				reply_gen(procctl_region_grant(&R, &res, strtoull(gid, NULL, 0)));
			else if (cmd[0] == 'r')
				reply_gen(procctl_region_revoke(&R, &res));
			else
				reply_gen(procctl_region_drop(&R, &res));
		} else if (!strcmp(cmd, "forge")) {
			cmd_forge(args);
		} else if (!strcmp(cmd, "begin")) {
			cmd_begin();
		} else if (!strcmp(cmd, "flood")) {
			cmd_flood();
		} else if (!strcmp(cmd, "config")) {
			static char hex[2 * PROCCTL_PAYLOAD_MAX + 1];
			uint32_t i;
			for (i = 0; i < R.length; i++)
				snprintf(hex + 2 * i, 3, "%02x", R.payload[i]);
			hex[2 * R.length] = 0;
			reply("ok %s", hex);
		} else if (!strcmp(cmd, "readstate")) {
			cmd_readstate(args);
		} else if (!strcmp(cmd, "exit")) {
			break;
		} else {
			reply("err %d unknown command %s", EINVAL, cmd);
		}
	}
	procctl_region_unmap(&R);
	return 0;
}
