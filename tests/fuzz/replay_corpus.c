/* Replays the committed seed corpus through both readers in the normal
 * build: files named ok_* must be accepted, bad_* rejected with a one-line
 * message naming the file. Usage: replay_corpus <corpus dir>. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>

#include "fuzz_common.h"

static const char *corpus;

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	*len = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = n > 0 ? (size_t)n : 0;
	return b;
}

static void replay(const char *sub, flow_weights *(*parse)(const void *, size_t, const char *,
							     char *, size_t))
{
	char dir[1024], path[2048], err[512];
	int ok = 0, bad = 0;
	snprintf(dir, sizeof dir, "%s/%s", corpus, sub);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		size_t len = 0;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unsigned char *b = slurp(path, &len);
		assert_non_null(b);
		err[0] = 0;
		flow_weights *w = parse(b, len, e->d_name, err, sizeof err);
		int want_ok = strncmp(e->d_name, "ok_", 3) == 0;
		if (!!w != want_ok) {
			print_error("%s: expected %s, got %s\n", path, want_ok ? "accept" : "reject",
				    w ? "accept" : err);
			fail();
		}
		if (w) {
			fuzz_touch(w);
			flow_weights_close(w);
			ok++;
		} else {
			assert_non_null(strstr(err, e->d_name));
			assert_null(strchr(err, '\n'));
			bad++;
		}
		free(b);
	}
	closedir(d);
	assert_true(ok >= 2 && bad >= 5);
}

static void test_safetensors_corpus(void **state)
{
	(void)state;
	replay("safetensors", flow_safetensors_parse);
}

static void test_npy_corpus(void **state)
{
	(void)state;
	replay("npy", flow_npy_parse);
}

int main(int argc, char **argv)
{
	corpus = argc > 1 ? argv[1] : "corpus";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_safetensors_corpus),
		cmocka_unit_test(test_npy_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
