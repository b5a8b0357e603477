/* SPDX-License-Identifier: Apache-2.0 */
/* escape.c - what procctl writes to a terminal, escaped in one place.
 * Much of what it shows comes from the daemon (names, ids, messages) and
 * through it from processes (status text): a hostile peer could put
 * terminal control sequences there (retitle the terminal, clear it, hide
 * text). stdout and stderr are replaced by streams that pass printable
 * ASCII, newline and tab, and write every other byte as \xNN. JSON output
 * (-o json) is ASCII already (its encoder escapes the rest, print_json)
 * and so passes unchanged. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* All of buf to fd: 0, or -1 (errno). */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static ssize_t escaped_write(void *cookie, const char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	int fd = (int)(intptr_t)cookie;
	char out[4 * 256];
	size_t i = 0, o;
	while (i < len) {
		for (o = 0; i < len && o + 4 <= sizeof out; i++) {
			unsigned char c = (unsigned char)buf[i];
			if ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t') {
				out[o++] = (char)c;
			} else {
				out[o++] = '\\';
				out[o++] = 'x';
				out[o++] = hex[c >> 4];
				out[o++] = hex[c & 15];
			}
		}
		if (write_all(fd, out, o) < 0)
			return -1;
	}
	return (ssize_t)len;
}

/* A stream over fd that escapes (buffered as the stream it replaces). */
static FILE *escaping(int fd, int mode)
{
	cookie_io_functions_t io = {NULL, escaped_write, NULL, NULL};
	FILE *f = fopencookie((void *)(intptr_t)fd, "w", io);
	if (f)
		setvbuf(f, NULL, mode, 0);
	return f;
}

int cli_escape_output(void)
{
	FILE *out = escaping(STDOUT_FILENO, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);
	FILE *err = escaping(STDERR_FILENO, _IONBF);
	if (!out || !err) {
		if (out)
			fclose(out);
		if (err)
			fclose(err);
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	stdout = out;
	stderr = err;
	return 0;
}
