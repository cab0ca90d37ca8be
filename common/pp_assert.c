/* pp_assert.c — the report of a failed PP_ASSERT (pp_assert.h): write(2)
 * and abort(), nothing that allocates or locks, so it is safe in a signal
 * handler and in the LD_PRELOAD agent. */
#include "pp_assert.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PP_ASSERTS
static size_t put(char *buf, size_t at, size_t cap, const char *s)
{
	size_t n = strlen(s);
	if (n > cap - at)
		n = cap - at;
	memcpy(buf + at, s, n);
	return at + n;
}

void pp_assert_fail(const char *file, int line, const char *cond)
{
	char buf[512], num[16];
	size_t k = sizeof num - 1, n = 0;
	num[k] = 0;
	unsigned u = line < 0 ? 0u : (unsigned)line;
	do
		num[--k] = (char)('0' + u % 10);
	while ((u /= 10) && k);
	n = put(buf, n, sizeof buf - 1, file);
	n = put(buf, n, sizeof buf - 1, ":");
	n = put(buf, n, sizeof buf - 1, num + k);
	n = put(buf, n, sizeof buf - 1, ": invariant failed: ");
	n = put(buf, n, sizeof buf - 1, cond);
	buf[n++] = '\n';
	for (size_t off = 0; off < n;) {
		ssize_t w = write(2, buf + off, n - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	abort();
}
#else
/* ISO C wants a translation unit to declare something */
typedef int pp_assert_unused;
#endif
