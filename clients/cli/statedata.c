/* SPDX-License-Identifier: Apache-2.0 */
/* statedata.c - a process's own state bytes, shown (statedata.h). */
#include "statedata.h"

#include <string.h>

#include "pcsampling_schema.h"

int printable(const uint8_t *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return 0;
	return 1;
}

/* A function's name: at most its field; a byte that is not printable
 * ASCII, a space or a backslash as \xNN (one name, one word). */
static void show_name(FILE *out, const char *s, size_t cap)
{
	size_t i, n = strnlen(s, cap);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c > 0x20 && c < 0x7f && c != '\\')
			fputc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
}

/* GPU PC sampling's status (schema 2 of pcsamp, libprocctl-cupti). */
static void show_pcsampling(FILE *out, const uint8_t *p)
{
	static const char *const calls[] = {"-", "enable", "configure", "start", "stop", "getdata", "disable"};
	struct pcsampling_status s;
	uint32_t i;
	memcpy(&s, p, sizeof s);
	fprintf(out, "sampling:  turns=%llu held=%.3fs samples=%llu dropped=%llu other=%llu gpus=%u period=",
		(unsigned long long)s.turns, (double)s.held_ns / 1e9, (unsigned long long)s.samples,
		(unsigned long long)s.dropped, (unsigned long long)s.other_samples, s.gpus);
	if (s.period)
		fprintf(out, "2^%u\n", s.period);
	else
		fprintf(out, "default\n");
	fprintf(out, "cupti:     errors=%llu", (unsigned long long)s.cupti_errors);
	if (s.cupti_errors)
		fprintf(out, " last=%d in %s", (int)s.last_error, s.last_call < 7 ? calls[s.last_call] : "?");
	fprintf(out, "\n");
	for (i = 0; i < s.nfunctions && i < PCSAMPLING_TOP; i++) {
		fprintf(out, "function:  %llu ", (unsigned long long)s.top[i].samples);
		show_name(out, s.top[i].name, sizeof s.top[i].name);
		fprintf(out, "\n");
	}
}

void show_state_data(FILE *out, const uint8_t *p, size_t n)
{
	uint32_t magic = 0;
	if (n >= sizeof magic)
		memcpy(&magic, p, sizeof magic);
	if (n == sizeof(struct pcsampling_status) && magic == PCSAMPLING_MAGIC)
		show_pcsampling(out, p);
	else if (printable(p, n))
		fprintf(out, "data:      %.*s\n", (int)n, (const char *)p);
	else
		fprintf(out, "data:      %zu bytes (not text: -o json shows them in base64)\n", n);
}
