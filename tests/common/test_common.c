/* The shared layer: every formatter case the tools print, JSON strings that
 * parse whatever the bytes, the hash index through its allocator hooks and
 * under full collisions, and the grow macro. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pp_assert.h"
#include "pp_fmt.h"
#include "pp_grow.h"
#include "pp_hash.h"
#include "pp_json.h"

static void test_fmt_dur(void **state)
{
	(void)state;
	char b[32];
	assert_string_equal(pp_fmt_dur(b, sizeof b, 812), "812 ns");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 1500), "1.5 us");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 12345), "12.3 us");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 250e3), "250 us");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 2.5e6), "2.50 ms");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 15e6), "15.0 ms");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 150e6), "150 ms");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 3.2e9), "3.20 s");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 42e9), "42.0 s");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 420e9), "420 s");
	assert_string_equal(pp_fmt_dur(b, sizeof b, -2e3), "-2.0 us");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 0), "0 ns");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 0.0 / 0.0), "?");
	assert_string_equal(pp_fmt_dur(b, sizeof b, 1.0 / 0.0), "?");
	char small[4];
	assert_string_equal(pp_fmt_dur(small, sizeof small, 3.2e9), "3.2"); /* truncated, terminated */
}

/* Values, not buffers: several in one call each keep their own text (the
 * data-starvation evidence once printed "3.44 s of 2.99 s" for a wait of
 * 2.54 s, two values formatted into one buffer). */
static void test_fmt_values(void **state)
{
	(void)state;
	char line[128];
	snprintf(line, sizeof line, "%s of %s in %s", pp_dur(2.54e9).s, pp_dur(2.99e9).s,
		 pp_bytes(3 * 1048576.0).s);
	assert_string_equal(line, "2.54 s of 2.99 s in 3.0 MiB");
	assert_string_equal(pp_dur(1.0 / 0.0).s, "?");
}

static void test_fmt_bytes(void **state)
{
	(void)state;
	char b[32];
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 0), "0 B");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 512), "512 B");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 1536), "1.5 KiB");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 3 * 1048576.0), "3.0 MiB");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 2.5 * 1073741824.0), "2.5 GiB");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 5000.0 * 1099511627776.0), "5000.0 TiB");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, -2048), "-2.0 KiB");
	assert_string_equal(pp_fmt_bytes(b, sizeof b, 0.0 / 0.0), "?");
}

typedef struct sbuf { char s[512]; size_t n; } sbuf;

static void sink(void *ud, const char *p, size_t n)
{
	sbuf *b = ud;
	assert_true(b->n + n < sizeof b->s);
	memcpy(b->s + b->n, p, n);
	b->n += n;
	b->s[b->n] = 0;
}

static const char *js(sbuf *b, const char *s)
{
	b->n = 0;
	b->s[0] = 0;
	pp_json_string(sink, b, s);
	return b->s;
}

static void test_json_string(void **state)
{
	(void)state;
	sbuf b;
	assert_string_equal(js(&b, NULL), "\"\"");
	assert_string_equal(js(&b, ""), "\"\"");
	assert_string_equal(js(&b, "plain"), "\"plain\"");
	assert_string_equal(js(&b, "a\"b\\c"), "\"a\\\"b\\\\c\"");
	assert_string_equal(js(&b, "l1\nl2\tx\x01"), "\"l1\\nl2\\tx\\u0001\"");
	assert_string_equal(js(&b, "</script>"), "\"\\u003c/script>\"");
	/* valid UTF-8 passes through: é, €, 😀 */
	assert_string_equal(js(&b, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
			    "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	/* invalid: a lone continuation byte, a truncated sequence at the end,
	 * an overlong '/', a surrogate, past U+10FFFF */
	assert_string_equal(js(&b, "a\x80z"), "\"a\\ufffdz\"");
	assert_string_equal(js(&b, "x\xe2\x82"), "\"x\\ufffd\\ufffd\"");
	assert_string_equal(js(&b, "\xc0\xaf"), "\"\\ufffd\\ufffd\"");
	assert_string_equal(js(&b, "\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
	assert_string_equal(js(&b, "\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

static void test_json_writer(void **state)
{
	(void)state;
	sbuf b = {{0}, 0};
	pp_json w;
	pp_json_init(&w, sink, &b);
	pp_json_obj(&w);
	pp_json_key(&w, "name");
	pp_json_str(&w, NULL);
	pp_json_key(&w, "n");
	pp_json_int(&w, -3);
	pp_json_key(&w, "rows");
	pp_json_arr(&w);
	pp_json_num(&w, 1.5);
	pp_json_num(&w, 0.0 / 0.0);
	pp_json_obj(&w);
	pp_json_end(&w);
	pp_json_bool(&w, 1);
	pp_json_null(&w);
	pp_json_end(&w);
	pp_json_key(&w, "ok");
	pp_json_bool(&w, 0);
	pp_json_end(&w);
	pp_json_end(&w); /* one too many: ignored */
	assert_string_equal(b.s, "{\"name\":\"\",\"n\":-3,\"rows\":[1.5,null,{},true,null],\"ok\":false}");
}

/* An allocator that counts, as the agent's arena would stand in for malloc. */
typedef struct counting { int allocs, frees; size_t live; } counting;

static void *c_zalloc(size_t size, void *ud)
{
	counting *c = ud;
	c->allocs++;
	c->live += size;
	return calloc(1, size);
}

static void c_free(void *p, size_t size, void *ud)
{
	counting *c = ud;
	c->frees++;
	c->live -= size;
	free(p);
}

static int find(const pp_hash *h, char **keys, const char *k)
{
	uint32_t it = 0, id;
	while (pp_hash_next(h, pp_hash_str(k), &it, &id))
		if (strcmp(keys[id], k) == 0)
			return (int)id;
	return -1;
}

static void test_hash_index(void **state)
{
	(void)state;
	counting c = {0, 0, 0};
	pp_alloc al = {c_zalloc, c_free, &c};
	pp_hash h;
	pp_hash_init(&h, &al);
	enum { N = 5000 };
	static char buf[N][16];
	char *keys[N];
	assert_int_equal(find(&h, keys, "absent"), -1); /* empty table */
	for (int i = 0; i < N; i++) {
		snprintf(buf[i], sizeof buf[i], "k%d", i);
		keys[i] = buf[i];
		assert_int_equal(find(&h, keys, keys[i]), -1);
		assert_int_equal(pp_hash_add(&h, pp_hash_str(keys[i]), (uint32_t)i), 0);
	}
	assert_int_equal(h.n, N);
	assert_true(h.cap >= 2 * N);
	for (int i = 0; i < N; i++)
		assert_int_equal(find(&h, keys, keys[i]), i);
	assert_int_equal(find(&h, keys, "k5000"), -1);
	assert_true(c.allocs > 1);        /* it grew through the hooks */
	assert_int_equal(c.frees, c.allocs - 1);
	pp_hash_free(&h);
	assert_int_equal(c.frees, c.allocs);
	assert_int_equal(c.live, 0);
}

static void test_hash_collisions(void **state)
{
	(void)state;
	pp_hash h;
	pp_hash_init(&h, NULL);
	/* 100 ids under one hash, then another hash whose home slot is taken */
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(pp_hash_add(&h, 7, i), 0);
	assert_int_equal(pp_hash_add(&h, 8, 1000), 0);
	int seen[100] = {0}, n = 0;
	uint32_t it = 0, id;
	while (pp_hash_next(&h, 7, &it, &id)) {
		assert_true(id < 100);
		seen[id]++;
		n++;
	}
	assert_int_equal(n, 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(seen[i], 1);
	it = 0;
	assert_true(pp_hash_next(&h, 8, &it, &id));
	assert_int_equal(id, 1000);
	assert_false(pp_hash_next(&h, 8, &it, &id));
	it = 0;
	assert_false(pp_hash_next(&h, 9, &it, &id));
	/* cleared: no ids, the memory kept and usable again */
	uint32_t cap = h.cap;
	pp_hash_clear(&h);
	it = 0;
	assert_false(pp_hash_next(&h, 7, &it, &id));
	assert_int_equal(h.n, 0);
	assert_int_equal(h.cap, cap);
	assert_int_equal(pp_hash_add(&h, 7, 5), 0);
	it = 0;
	assert_true(pp_hash_next(&h, 7, &it, &id));
	assert_int_equal(id, 5);
	assert_false(pp_hash_next(&h, 7, &it, &id));
	pp_hash_free(&h);
	/* the hash functions: stable values other code and stored data rely on */
	assert_int_equal(pp_hash_str(""), 2166136261u);
	assert_int_equal(pp_hash_str("a"), 0xe40c292cu);
	assert_int_equal(pp_hash_mem("a", 1), pp_hash_str("a"));
	assert_int_not_equal(pp_hash_u64x2(1, 2), pp_hash_u64x2(2, 1));
}

static void test_grow(void **state)
{
	(void)state;
	int *v = NULL, n = 0, cap = 0;
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(PP_GROW(v, n + 1, cap), 0);
		v[n++] = i;
	}
	assert_true(cap >= 1000 && cap < 2048);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	size_t scap = 0;
	double *d = NULL;
	assert_int_equal(PP_GROW(d, 3, scap), 0);
	assert_int_equal(scap, 16);
	assert_int_equal(PP_GROW(d, (size_t)1 << 62, scap), -1); /* overflow: unchanged */
	assert_int_equal(scap, 16);
	assert_non_null(d);
	free(d);
	free(v);
}

static int side_effects;
static int touch(void) { return ++side_effects; }

/* PP_ASSERT: in a build with PP_ASSERTS (Debug, sanitizers) a false one
 * writes file:line and the condition to stderr and aborts; elsewhere the
 * condition is not even evaluated. */
static void test_assert(void **state)
{
	(void)state;
	PP_ASSERT(1 + 1 == 2);
	PP_ASSERT(touch() > 0);
#ifdef PP_ASSERTS
	assert_int_equal(side_effects, 1);
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		int broken = 3;
		PP_ASSERT(broken < 2);
		_exit(0);
	}
	close(fd[1]);
	char buf[512] = "";
	ssize_t n, got = 0;
	while ((n = read(fd[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = 0;
	close(fd[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	if (!strstr(buf, "test_common.c:") || !strstr(buf, ": invariant failed: broken < 2\n"))
		fail_msg("the report was '%s'", buf);
#else
	assert_int_equal(side_effects, 0);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_dur),         cmocka_unit_test(test_fmt_values),
		cmocka_unit_test(test_fmt_bytes),       cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_json_writer),     cmocka_unit_test(test_hash_index),
		cmocka_unit_test(test_hash_collisions), cmocka_unit_test(test_grow),
		cmocka_unit_test(test_assert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
