/* Weight files: round trips, numpy interoperability both ways, and every
 * malformed-file case rejected with a one-line message naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weights.h"

static char dir[256];

static const char *tpath(const char *name)
{
	static char p[16][512];
	static int k;
	k = (k + 1) % 16;
	snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
	return p[k];
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/flow_weights_XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int py(const char *code, const char *arg)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c \"%s\" '%s'", code, arg);
	return system(cmd);
}

static int no_temp_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ok = 1;
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".tmp."))
			ok = 0;
	closedir(d);
	return ok;
}

static void test_safetensors_roundtrip(void **state)
{
	(void)state;
	float k[6] = {1, -2, 3.5f, 4, 5, 6};
	int64_t idx[4] = {-1, 0, 1, 1LL << 40};
	unsigned char flag = 1;
	char err[512];
	flow_weight ts[4] = {
		{.name = "dense/kernel", .dtype = FLOW_WD_F32, .rank = 2, .shape = {2, 3}, .data = k, .nbytes = 24},
		{.name = "idx", .dtype = FLOW_WD_I64, .rank = 1, .shape = {4}, .data = idx, .nbytes = 32},
		{.name = "flag \"q\"", .dtype = FLOW_WD_BOOL, .rank = 0, .data = &flag, .nbytes = 1},
		{.name = "empty", .dtype = FLOW_WD_F64, .rank = 2, .shape = {0, 7}, .data = NULL, .nbytes = 0},
	};
	const char *meta[] = {"format", "pt", "note", "x\\y"};
	const char *p = tpath("a.safetensors");
	assert_int_equal(flow_safetensors_write(p, ts, 4, meta, 2, err, sizeof err), 0);
	assert_true(no_temp_files());
	flow_weights *w = flow_weights_open_any(p, err, sizeof err);
	assert_non_null(w);
	assert_int_equal(flow_weights_count(w), 4);
	const flow_weight *t = flow_weights_find(w, "dense/kernel");
	assert_non_null(t);
	assert_int_equal(t->dtype, FLOW_WD_F32);
	assert_int_equal(t->rank, 2);
	assert_int_equal(t->shape[1], 3);
	assert_memory_equal(t->data, k, 24);
	/* data 8-byte aligned in the file (header padded) */
	assert_int_equal(((uintptr_t)t->data) % 8, 0);
	t = flow_weights_find(w, "idx");
	assert_memory_equal(t->data, idx, 32);
	t = flow_weights_find(w, "flag \"q\"");
	assert_non_null(t);
	assert_int_equal(t->rank, 0);
	assert_int_equal(*(const unsigned char *)t->data, 1);
	t = flow_weights_find(w, "empty");
	assert_int_equal(t->nbytes, 0);
	assert_string_equal(flow_weights_metadata(w, "note"), "x\\y");
	float f[6];
	flow_weights_to_f32(flow_weights_find(w, "idx"), f);
	assert_true(f[0] == -1.0f && f[3] == (float)(1LL << 40));
	flow_weights_close(w);
	/* an independent reader: json + numpy.frombuffer */
	assert_int_equal(py("import sys,json,struct,numpy as np\n"
			    "b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]\n"
			    "h=json.loads(b[8:8+n]); d=h['dense/kernel']; o=d['data_offsets']\n"
			    "a=np.frombuffer(b[8+n+o[0]:8+n+o[1]],dtype='<f4').reshape(d['shape'])\n"
			    "assert a.tolist()==[[1,-2,3.5],[4,5,6]] and h['__metadata__']['format']=='pt'\n"
			    "assert (8+n)%8==0", p), 0);
	/* overwrite replaces atomically */
	assert_int_equal(flow_safetensors_write(p, ts, 1, NULL, 0, err, sizeof err), 0);
	w = flow_weights_open(p, FLOW_WF_SAFETENSORS, err, sizeof err);
	assert_non_null(w);
	assert_int_equal(flow_weights_count(w), 1);
	flow_weights_close(w);
	/* writer refuses duplicates and bad sizes, and leaves nothing behind */
	flow_weight dup[2] = {ts[0], ts[0]};
	assert_int_equal(flow_safetensors_write(tpath("dup.safetensors"), dup, 2, NULL, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "given twice"));
	assert_int_equal(access(tpath("dup.safetensors"), F_OK), -1);
	assert_int_equal(flow_safetensors_write("/nonexistent/dir/x.safetensors", ts, 1, NULL, 0, err, sizeof err), -1);
	assert_non_null(strstr(err, "/nonexistent/dir/x.safetensors"));
	assert_true(no_temp_files());
}

static void test_npy_roundtrip_numpy_reads(void **state)
{
	(void)state;
	float a[12];
	double d[3] = {0.1, -2e300, 3};
	int32_t i4[5] = {1, -2, 3, 2147483647, -2147483647 - 1};
	unsigned char b[2] = {1, 0};
	char err[512];
	for (int i = 0; i < 12; i++)
		a[i] = 0.5f * (float)i;
	flow_weight t = {.name = "a", .dtype = FLOW_WD_F32, .rank = 2, .shape = {3, 4}, .data = a, .nbytes = 48};
	const char *p = tpath("a.npy");
	assert_int_equal(flow_npy_write(p, &t, err, sizeof err), 0);
	assert_int_equal(py("import sys,numpy as np\n"
			    "a=np.load(sys.argv[1]); assert a.dtype==np.float32 and a.shape==(3,4)\n"
			    "assert (a==np.arange(12,dtype='f4').reshape(3,4)*0.5).all()\n"
			    "assert (open(sys.argv[1],'rb').read().index(b'\\n')+1)%64==0", p), 0);
	flow_weight td = {.name = "d", .dtype = FLOW_WD_F64, .rank = 1, .shape = {3}, .data = d, .nbytes = 24};
	assert_int_equal(flow_npy_write(tpath("d.npy"), &td, err, sizeof err), 0);
	assert_int_equal(py("import sys,numpy as np\n"
			    "a=np.load(sys.argv[1]); assert a.dtype==np.float64 and a.shape==(3,)\n"
			    "assert a.tolist()==[0.1,-2e300,3.0]", tpath("d.npy")), 0);
	flow_weight ti = {.name = "i", .dtype = FLOW_WD_I32, .rank = 0, .data = i4, .nbytes = 4};
	assert_int_equal(flow_npy_write(tpath("i.npy"), &ti, err, sizeof err), 0);
	assert_int_equal(py("import sys,numpy as np\n"
			    "a=np.load(sys.argv[1]); assert a.dtype==np.int32 and a.shape==() and a==1",
			    tpath("i.npy")), 0);
	flow_weight tb = {.name = "b", .dtype = FLOW_WD_BOOL, .rank = 1, .shape = {2}, .data = b, .nbytes = 2};
	assert_int_equal(flow_npy_write(tpath("b.npy"), &tb, err, sizeof err), 0);
	assert_int_equal(py("import sys,numpy as np\n"
			    "a=np.load(sys.argv[1]); assert a.dtype==np.bool_ and a.tolist()==[True,False]",
			    tpath("b.npy")), 0);
	/* and back through our reader */
	flow_weights *w = flow_weights_open_any(p, err, sizeof err);
	assert_non_null(w);
	const flow_weight *r = flow_weights_at(w, 0);
	assert_string_equal(r->name, "a");
	assert_int_equal(r->rank, 2);
	assert_memory_equal(r->data, a, 48);
	flow_weights_close(w);
	(void)i4;
}

static void test_numpy_written_read_back(void **state)
{
	(void)state;
	char err[512];
	const char *v1 = tpath("np1.npy"), *v2 = tpath("np2.npy"), *fo = tpath("npf.npy"),
		   *i8 = tpath("npi8.npy"), *hf = tpath("nph.npy");
	char code[2048];
	snprintf(code, sizeof code,
		 "import numpy as np\n"
		 "from numpy.lib import format as F\n"
		 "a=np.arange(24,dtype='f4').reshape(2,3,4)/4\n"
		 "np.save('%s',a)\n"
		 "f=open('%s','wb'); F.write_array(f,a,version=(2,0)); f.close()\n"
		 "np.save('%s',np.asfortranarray(a))\n"
		 "np.save('%s',np.array([[1,-5],[7,1<<40]],dtype='<i8'))\n"
		 "np.save('%s',np.array([1.5,-2],dtype='<f2'))",
		 v1, v2, fo, i8, hf);
	assert_int_equal(py(code, ""), 0);
	const char *paths[3] = {v1, v2, fo};
	for (int k = 0; k < 3; k++) {
		flow_weights *w = flow_weights_open(paths[k], FLOW_WF_NPY, err, sizeof err);
		assert_non_null(w);
		const flow_weight *t = flow_weights_at(w, 0);
		assert_int_equal(t->dtype, FLOW_WD_F32);
		assert_int_equal(t->rank, 3);
		assert_true(t->shape[0] == 2 && t->shape[1] == 3 && t->shape[2] == 4);
		const float *f = t->data;
		for (int i = 0; i < 24; i++)
			assert_true(f[i] == (float)i / 4);
		flow_weights_close(w);
	}
	flow_weights *w = flow_weights_open(i8, FLOW_WF_NPY, err, sizeof err);
	assert_non_null(w);
	const int64_t *q = flow_weights_at(w, 0)->data;
	assert_true(q[1] == -5 && q[3] == (1LL << 40));
	flow_weights_close(w);
	w = flow_weights_open(hf, FLOW_WF_NPY, err, sizeof err);
	assert_non_null(w);
	float h[2];
	flow_weights_to_f32(flow_weights_at(w, 0), h);
	assert_true(h[0] == 1.5f && h[1] == -2.0f);
	flow_weights_close(w);
}

static void test_text_roundtrip(void **state)
{
	(void)state;
	float a[5] = {1.0f / 3, -1e-20f, 3e30f, 0, 7};
	int32_t b[3] = {-1, 0, 2147483647};
	char err[512];
	flow_weight ts[2] = {
		{.name = "w", .dtype = FLOW_WD_F32, .rank = 1, .shape = {5}, .data = a, .nbytes = 20},
		{.name = "b", .dtype = FLOW_WD_I32, .rank = 2, .shape = {1, 3}, .data = b, .nbytes = 12},
	};
	const char *p = tpath("w.txt");
	assert_int_equal(flow_text_weights_write(p, ts, 2, err, sizeof err), 0);
	flow_weights *w = flow_weights_open_any(p, err, sizeof err);
	assert_non_null(w);
	assert_memory_equal(flow_weights_find(w, "w")->data, a, 20); /* %.9g round-trips f32 */
	assert_memory_equal(flow_weights_find(w, "b")->data, b, 12);
	assert_true(flow_weights_file_bytes(w) > 0);
	flow_weights_close(w);
	/* malformed text */
	FILE *f = fopen(p, "w");
	fprintf(f, "flowtxt 1\ntensor w F32 1 3\n1.0\nabc\n2\n");
	fclose(f);
	assert_null(flow_weights_open(p, FLOW_WF_TEXT, err, sizeof err));
	assert_non_null(strstr(err, "line 4: expected a number, got 'abc'"));
	f = fopen(p, "w");
	fprintf(f, "flowtxt 1\ntensor w F32 1 3\n1.0\n");
	fclose(f);
	assert_null(flow_weights_open(p, FLOW_WF_TEXT, err, sizeof err));
	assert_non_null(strstr(err, "unexpected end of file in tensor 'w' (value 1 of 3)"));
	f = fopen(p, "w");
	fprintf(f, "flowtxt 1\ntensor w C64 1 3\n");
	fclose(f);
	assert_null(flow_weights_open(p, FLOW_WF_TEXT, err, sizeof err));
	assert_non_null(strstr(err, "unsupported dtype 'C64'"));
}

/* ---- malformed safetensors ---- */

static size_t st_image(unsigned char *buf, const char *hdr, size_t data_len)
{
	size_t n = strlen(hdr);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
	memcpy(buf + 8, hdr, n);
	memset(buf + 8 + n, 0x3f, data_len);
	return 8 + n + data_len;
}

static void expect_st(const char *hdr, size_t data_len, const char *msg)
{
	unsigned char buf[1024];
	char err[512];
	size_t len = st_image(buf, hdr, data_len);
	flow_weights *w = flow_safetensors_parse(buf, len, "m.safetensors", err, sizeof err);
	if (w || !strstr(err, msg) || strncmp(err, "m.safetensors: ", 15) != 0 || strchr(err, '\n')) {
		print_error("header %s\n  got: %s\n  want: %s\n", hdr, w ? "(accepted)" : err, msg);
		flow_weights_close(w);
		fail();
	}
}

static void test_safetensors_malformed(void **state)
{
	(void)state;
	unsigned char buf[256];
	char err[512];
	const char *T = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
	/* sanity: the base case is accepted */
	size_t len = st_image(buf, T, 8);
	flow_weights *w = flow_safetensors_parse(buf, len, "m.safetensors", err, sizeof err);
	assert_non_null(w);
	flow_weights_close(w);
	assert_null(flow_safetensors_parse(buf, 5, "m.safetensors", err, sizeof err));
	assert_non_null(strstr(err, "truncated: 5 bytes"));
	/* header length */
	memset(buf, 0, 16);
	buf[0] = 0x01; buf[1] = 0xe1; buf[2] = 0xf5; buf[3] = 0x05; /* 100000001 */
	assert_null(flow_safetensors_parse(buf, 16, "m.safetensors", err, sizeof err));
	assert_non_null(strstr(err, "header length 100000001 at offset 0 exceeds the cap of 100000000"));
	memset(buf, 0, 16);
	buf[0] = 200;
	assert_null(flow_safetensors_parse(buf, 16, "m.safetensors", err, sizeof err));
	assert_non_null(strstr(err, "header length 200 at offset 0 runs past the end of the file (16 bytes)"));
	/* JSON syntax */
	expect_st("[1,2]", 0, "must be a JSON object starting with '{'");
	expect_st("{\"a\":{\"dtype\":\"F32\",}}", 0, "safetensors header: expected a string at offset 28");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "expected ',' or '}' at offset");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8, "trailing bytes after the header object");
	expect_st("{\"a\xff\":{}}", 0, "invalid UTF-8 in string");
	expect_st("{\"a\\q\":{}}", 0, "bad escape in string");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", 8, "leading zero in integer");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "expected a non-negative integer");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "got a fraction");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "more than 8 items in shape");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8, "more than 2 items in data_offsets");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 0, "tensor 'a' lacks \"data_offsets\"");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8, "unknown field \"x\" in tensor 'a'");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "duplicate field \"dtype\"");
	expect_st("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ values must be strings");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", 8, "integer overflows 64 bits");
	/* dtype */
	expect_st("{\"a\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "unsupported dtype \"C64\" for tensor 'a'");
	/* offsets */
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
		  "tensor 'a': data_offsets [0, 8] (file offsets 62..70) outside the file of 66 bytes");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "begin after end");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "hold 8 bytes but dtype F32 and its shape need 12");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}", 6,
		  "tensor 'b' overlaps the previous tensor: data_offsets begin 2 < 4");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
		  "hole in the data: bytes 4..8");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "hole in the data: bytes 0..4");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "4 bytes after the last tensor");
	expect_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
		  "duplicate tensor name 'a'");
	/* files */
	assert_null(flow_weights_open(tpath("missing.safetensors"), FLOW_WF_SAFETENSORS, err, sizeof err));
	assert_non_null(strstr(err, "missing.safetensors: cannot open"));
	FILE *f = fopen(tpath("empty.safetensors"), "w");
	fclose(f);
	assert_null(flow_weights_open(tpath("empty.safetensors"), FLOW_WF_SAFETENSORS, err, sizeof err));
	assert_non_null(strstr(err, "empty.safetensors: empty file"));
	/* a truncated copy of a valid file */
	float v[4] = {1, 2, 3, 4};
	flow_weight t = {.name = "v", .dtype = FLOW_WD_F32, .rank = 1, .shape = {4}, .data = v, .nbytes = 16};
	assert_int_equal(flow_safetensors_write(tpath("t.safetensors"), &t, 1, NULL, 0, err, sizeof err), 0);
	assert_int_equal(truncate(tpath("t.safetensors"), 70), 0);
	assert_null(flow_weights_open(tpath("t.safetensors"), FLOW_WF_SAFETENSORS, err, sizeof err));
	assert_non_null(strstr(err, "t.safetensors: tensor 'v': data_offsets [0, 16]"));
	assert_non_null(strstr(err, "outside the file of 70 bytes"));
}

/* ---- malformed npy ---- */

static size_t npy_image(unsigned char *buf, int major, const char *hdr, size_t data_len)
{
	size_t n = strlen(hdr), pre = major == 1 ? 10 : 12;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	buf[8] = (unsigned char)n;
	buf[9] = (unsigned char)(n >> 8);
	if (major != 1)
		buf[10] = buf[11] = 0;
	memcpy(buf + pre, hdr, n);
	memset(buf + pre + n, 0, data_len);
	return pre + n + data_len;
}

static void expect_npy(int major, const char *hdr, size_t data_len, const char *msg)
{
	unsigned char buf[1024];
	char err[512];
	size_t len = npy_image(buf, major, hdr, data_len);
	flow_weights *w = flow_npy_parse(buf, len, "m.npy", err, sizeof err);
	if (w || !strstr(err, msg) || strncmp(err, "m.npy: ", 7) != 0 || strchr(err, '\n')) {
		print_error("header %s\n  got: %s\n  want: %s\n", hdr, w ? "(accepted)" : err, msg);
		flow_weights_close(w);
		fail();
	}
}

static void test_npy_malformed(void **state)
{
	(void)state;
	unsigned char buf[256];
	char err[512];
	const char *H = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
	size_t len = npy_image(buf, 1, H, 8);
	flow_weights *w = flow_npy_parse(buf, len, "m.npy", err, sizeof err);
	assert_non_null(w);
	flow_weights_close(w);
	len = npy_image(buf, 2, H, 8);
	w = flow_npy_parse(buf, len, "m.npy", err, sizeof err);
	assert_non_null(w);
	flow_weights_close(w);

	assert_null(flow_npy_parse(buf, 7, "m.npy", err, sizeof err));
	assert_non_null(strstr(err, "m.npy: truncated: 7 bytes"));
	memcpy(buf, "\x93NUMPZ", 6);
	assert_null(flow_npy_parse(buf, 40, "m.npy", err, sizeof err));
	assert_non_null(strstr(err, "bad magic at offset 0"));
	len = npy_image(buf, 4, H, 8);
	assert_null(flow_npy_parse(buf, len, "m.npy", err, sizeof err));
	assert_non_null(strstr(err, "unsupported format version 4.0 at offset 6"));
	/* header cap and length */
	len = npy_image(buf, 2, H, 8);
	buf[8] = 0x11; buf[9] = 0x27; buf[10] = 0; buf[11] = 0; /* 10001 */
	assert_null(flow_npy_parse(buf, len, "m.npy", err, sizeof err));
	assert_non_null(strstr(err, "header length 10001 at offset 8 exceeds the cap of 10000 bytes"));
	len = npy_image(buf, 1, H, 0);
	buf[8] = 200;
	assert_null(flow_npy_parse(buf, len, "m.npy", err, sizeof err));
	assert_non_null(strstr(err, "header length 200 at offset 8 runs past the end of the file"));
	/* dict */
	expect_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8,
		   "npy header: unsupported dtype descr '>f4' (big-endian) at offset 20");
	expect_npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16, "unsupported dtype descr '<c8'");
	expect_npy(1, "{'descr': '<f4', 'shape': (2,), }\n", 8, "lacks 'fortran_order'");
	expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", 8, "unexpected key 'x'");
	expect_npy(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 8, "duplicate key 'descr'");
	expect_npy(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }\n", 8, "fortran_order must be True or False");
	expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }\n", 8, "shape must be a tuple");
	expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,-1), }\n", 8, "expected a non-negative integer in shape");
	expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", 4, "more than 8 dimensions");
	expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk\n", 8, "unexpected bytes after the header dict");
	expect_npy(1, "['descr']\n", 0, "expected '{' at offset 10");
	/* data size */
	expect_npy(1, H, 4, "data truncated: <f4 shape needs 8 bytes at offset 68, the file has 4");
	expect_npy(1, H, 12, "4 unexpected bytes after the data at offset 76");
	expect_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,4), }\n", 0, "too large");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_safetensors_roundtrip),
		cmocka_unit_test(test_npy_roundtrip_numpy_reads),
		cmocka_unit_test(test_numpy_written_read_back),
		cmocka_unit_test(test_text_roundtrip),
		cmocka_unit_test(test_safetensors_malformed),
		cmocka_unit_test(test_npy_malformed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
