/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_elfnote - the ELF note parser of fast discovery, which reads any
 * file a process maps executable (the process chooses its bytes). It must
 * return a count within max with every offset inside the file, or a
 * documented error. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "procctl_agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	uint64_t off[16];
	int n, i;
	if (fd < 0 && (fd = memfd_create("fuzz_elfnote", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) < 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	n = procctl_elf_hello_sites(fd, off, 16);
	if (n < 0 && n != -ENOEXEC && n != -EFBIG && n != -ENOMEM)
		abort();
	if (n > 16)
		abort();
	for (i = 0; i < n; i++)
		if (off[i] >= size)
			abort();
	return 0;
}
