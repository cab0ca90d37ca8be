/* pp_debug.c — the PHASEPROF_DEBUG channel (pp_debug.h). */
#include "pp_debug.h"
#include "pp_env.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pp_debug_state = -1;
static const char *areas; /* the variable's value, read once */

static void read_env(void)
{
	const char *v = getenv(PP_ENV_DEBUG);
	areas = v && *v && strcmp(v, "0") != 0 ? v : NULL;
	pp_debug_state = areas != NULL;
}

int pp_debug_on(const char *area)
{
	if (pp_debug_state < 0)
		read_env();
	if (!areas)
		return 0;
	if (strcmp(areas, "1") == 0 || strcmp(areas, "all") == 0)
		return 1;
	/* a comma-separated list: whole words only ("store" is not "stores") */
	size_t n = strlen(area);
	for (const char *p = areas; *p;) {
		size_t k = strcspn(p, ",");
		if ((k == n && strncmp(p, area, n) == 0) || (k == 3 && strncmp(p, "all", 3) == 0))
			return 1;
		p += k;
		p += *p == ',';
	}
	return 0;
}

void pp_debug_emit(const char *area, const char *fmt, ...)
{
	if (!pp_debug_on(area))
		return;
	/* one line in one write: lines of other processes (record's ingest
	 * beside the program) do not cut into it */
	char line[1024];
	int k = snprintf(line, sizeof line, "phaseprof[debug %s]: ", area);
	va_list ap;
	va_start(ap, fmt);
	if (k > 0 && (size_t)k < sizeof line)
		vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
	va_end(ap);
	size_t len = strnlen(line, sizeof line - 2);
	line[len++] = '\n';
	fwrite(line, 1, len, stderr);
	fflush(stderr);
}
