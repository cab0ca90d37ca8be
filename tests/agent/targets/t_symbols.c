/* A program whose exported symbols share names with functions the agent
 * uses (zlib's crc32, glibc's malloc_stats) or defines internally, with
 * other signatures: the agent must never call them. Linked with exported
 * symbols (-rdynamic), as python is. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a string hash, called crc32 like many programs' own */
uint32_t crc32(const char *text)
{
	uint32_t h = 0;
	for (size_t i = 0; i < strlen(text); i++)
		h = h * 31 + (unsigned char)text[i];
	return h;
}

void malloc_stats(const char *who) { printf("stats for %s\n", who + 0 * strlen(who)); }
int pp_spool_create(const char *a) { return (int)strlen(a); }
uint64_t pp_mono_ns(const char *a) { return strlen(a); }

int main(void)
{
	for (int i = 0; i < 2000; i++)
		free(malloc(64 + (size_t)i));
	printf("crc32(abc) = %u\n", crc32("abc"));
	malloc_stats("main");
	printf("%d %d\n", pp_spool_create("four"), (int)pp_mono_ns("three"));
	return 0;
}
